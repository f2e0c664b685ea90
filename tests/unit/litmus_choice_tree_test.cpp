// Which runs of a litmus test are made (sim/litmus/choice_tree.h), on made-up trees of choices
// whose every path is known: every order when the tree fits the budget, each once; runs at
// random where it does not, also when the first run's path is small and the rest of the tree is
// not; the share of the tree explored; the same runs from the same seed.
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "sim/litmus/choice_tree.h"

using namespace p2psim::litmus;

namespace {

// A tree of choices: a node with no children is a path's end.
struct node {
  std::vector<std::unique_ptr<node>> children;
};

std::unique_ptr<node> leaf() {
  return std::make_unique<node>();
}

// A full tree: `depth` decisions of `fan` alternatives each.
std::unique_ptr<node> full(size_t fan, size_t depth) {
  auto n = leaf();
  if (depth)
    for (size_t i = 0; i < fan; ++i) n->children.push_back(full(fan, depth - 1));
  return n;
}

std::unique_ptr<node> branches(std::vector<std::unique_ptr<node>> c) {
  auto n = leaf();
  n->children = std::move(c);
  return n;
}

uint64_t leaves(const node& n) {
  if (n.children.empty()) return 1;
  uint64_t s = 0;
  for (const auto& c : n.children) s += leaves(*c);
  return s;
}

// Runs through `root` as a litmus run does: the prefix, then alternative 0 or at random.
run_path runner(const node& root, uint64_t* made = nullptr) {
  return [&root, made](const std::vector<size_t>& prefix,
                       std::optional<uint64_t> seed) -> std::optional<tree_path> {
    if (made) ++*made;
    std::optional<std::mt19937_64> rng;
    if (seed) rng.emplace(*seed);
    tree_path p;
    for (const node* n = &root; !n->children.empty();) {
      const size_t options = n->children.size(), i = p.taken.size();
      size_t c = 0;
      if (i < prefix.size())
        c = prefix[i] < options ? prefix[i] : 0;
      else if (rng)
        c = std::uniform_int_distribution<size_t>(0, options - 1)(*rng);
      p.taken.push_back(c);
      p.options.push_back(options);
      n = n->children[c].get();
    }
    return p;
  };
}

std::multiset<std::string> counted_paths(const tree_walk& w) {
  std::multiset<std::string> s;
  for (size_t i : w.counted) s.insert(format_choices(w.runs[i].taken));
  return s;
}

}  // namespace

TEST_CASE("choice tree: a test with no decision is one run in every order", "[unit][litmus]") {
  auto root = leaf();
  uint64_t made = 0;
  tree_walk w = walk_tree({}, runner(*root, &made));
  CHECK(made == 1);
  CHECK(w.exhaustive);
  CHECK(w.counted == std::vector<size_t>{0});
  CHECK(w.tree_estimate == 1);
  CHECK(w.explored_share() == 1);
}

TEST_CASE("choice tree: a tree that fits is walked in every order and each path counted once",
          "[unit][litmus]") {
  // Uneven: the in-order path ends after one decision, the others go deeper.
  std::vector<std::unique_ptr<node>> top;
  top.push_back(leaf());
  top.push_back(full(2, 3));
  top.push_back(full(3, 2));
  auto root = branches(std::move(top));
  REQUIRE(leaves(*root) == 18);
  tree_walk w = walk_tree({.budget = 200, .seed = 3, .probes = 8}, runner(*root));
  REQUIRE(w.exhaustive);
  auto paths = counted_paths(w);
  CHECK(paths.size() == 18);
  CHECK(std::set<std::string>(paths.begin(), paths.end()).size() == 18);  // each once
  CHECK(w.distinct == 18);
  CHECK(w.tree_estimate == 18);
  CHECK(w.explored_share() == 1);
  CHECK(w.runs.size() == 18);  // a quarter of the budget walked it: no estimate was needed
}

TEST_CASE("choice tree: a tree estimated to fit is walked on after a quarter of the budget",
          "[unit][litmus]") {
  auto root = full(2, 7);  // 128 paths: past 50, within 200
  tree_walk w = walk_tree({.budget = 200, .seed = 3, .probes = 8}, runner(*root));
  REQUIRE(w.exhaustive);
  CHECK(w.counted.size() == 128);
  CHECK(w.distinct == 128);
  CHECK(w.runs.size() == 128 + 8);  // the probes are made but not counted: their paths are
}

TEST_CASE("choice tree: a small first path does not send the whole budget down one corner",
          "[unit][litmus]") {
  // The in-order run makes one decision and ends; the other alternative holds 4,096 paths. Told
  // by its first run alone, the walk took this tree for one of two paths and spent its budget
  // depth first in the large branch, its first decisions fixed.
  std::vector<std::unique_ptr<node>> top;
  top.push_back(leaf());
  top.push_back(full(2, 12));
  auto root = branches(std::move(top));
  tree_walk w = walk_tree({.budget = 200, .seed = 5, .probes = 8}, runner(*root));
  CHECK_FALSE(w.exhaustive);
  CHECK(w.counted.size() == 200);
  // Knuth's estimate of 4,097 paths, within a factor of two for this seed.
  CHECK(w.tree_estimate > 2048);
  CHECK(w.tree_estimate < 8194);
  // Runs reached both halves of the large branch at its first two decisions.
  std::set<std::pair<size_t, size_t>> early;
  for (size_t i : w.counted)
    if (w.runs[i].taken.size() > 2) early.insert({w.runs[i].taken[1], w.runs[i].taken[2]});
  CHECK(early.size() == 4);
  CHECK(w.explored_share() == Approx(double(w.distinct) / w.tree_estimate));
  CHECK(w.explored_share() < 0.1);
}

TEST_CASE("choice tree: a tree larger than estimated still gets runs at random", "[unit][litmus]") {
  // 63 alternatives end at once; the in-order one holds 1,024 paths. Probes that all miss it
  // estimate 64 paths; the depth-first walk then stops at three quarters of the budget, and runs
  // at random take the rest, reaching the 63 short paths it never got to.
  std::vector<std::unique_ptr<node>> top;
  top.push_back(full(2, 10));
  for (int i = 0; i < 63; ++i) top.push_back(leaf());
  auto root = branches(std::move(top));
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    tree_walk w = walk_tree({.budget = 200, .seed = seed, .probes = 8}, runner(*root));
    INFO("seed " << seed << ", estimate " << w.tree_estimate);
    CHECK_FALSE(w.exhaustive);
    CHECK(w.counted.size() == 200);
    size_t short_paths = 0;
    for (size_t i : w.counted) short_paths += w.runs[i].taken.front() != 0;
    CHECK(short_paths >= 20);  // the 58 or so runs at random: most of them take a short path
  }
}

TEST_CASE("choice tree: the same seed makes the same runs", "[unit][litmus]") {
  auto root = full(3, 8);
  auto a = walk_tree({.budget = 50, .seed = 9, .probes = 8}, runner(*root));
  auto b = walk_tree({.budget = 50, .seed = 9, .probes = 8}, runner(*root));
  auto c = walk_tree({.budget = 50, .seed = 10, .probes = 8}, runner(*root));
  CHECK(counted_paths(a) == counted_paths(b));
  CHECK(counted_paths(a) != counted_paths(c));
}

TEST_CASE("choice tree: a run that fails stops the walk", "[unit][litmus]") {
  auto root = full(2, 10);
  uint64_t made = 0;
  auto inner = runner(*root);
  tree_walk w = walk_tree({.budget = 200, .seed = 1, .probes = 8},
                          [&](const std::vector<size_t>& p, std::optional<uint64_t> s) {
                            return ++made == 4 ? std::nullopt : inner(p, s);
                          });
  CHECK(w.failed);
  CHECK(made == 4);
  CHECK(w.runs.size() == 3);
  CHECK_FALSE(w.exhaustive);
}

TEST_CASE("choice tree: choices print without trailing in-order ones and parse back",
          "[unit][litmus]") {
  CHECK(format_choices({0, 2, 1, 0, 0}) == "0.2.1");
  CHECK(format_choices({}) == "0");
  CHECK(parse_choices("0.2.1") == std::vector<size_t>{0, 2, 1});
  CHECK_THROWS_AS(parse_choices("0..1"), std::invalid_argument);
  CHECK_THROWS_AS(parse_choices("1.x"), std::invalid_argument);
  CHECK_THROWS_AS(parse_choices("99999999999999999999999"), std::invalid_argument);
}
