#include "sim/litmus/choice_tree.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <stdexcept>

namespace p2psim::litmus {

namespace {

// The next prefix in depth-first order after a run that took `p`, or nothing when the tree is
// exhausted.
std::optional<std::vector<size_t>> next_prefix(const tree_path& p) {
  for (size_t i = p.taken.size(); i-- > 0;)
    if (p.taken[i] + 1 < p.options[i]) {
      std::vector<size_t> next(p.taken.begin(), p.taken.begin() + long(i));
      next.push_back(p.taken[i] + 1);
      return next;
    }
  return std::nullopt;
}

// Knuth's estimate of the tree's leaves from one path chosen uniformly at each decision.
double leaves_through(const tree_path& p) {
  double n = 1;
  for (size_t o : p.options) n *= double(o);
  return n;
}

}  // namespace

double tree_walk::explored_share() const {
  if (exhaustive) return 1;
  return std::min(1.0, double(distinct) / std::max(tree_estimate, 1.0));
}

tree_walk walk_tree(const walk_options& o, const run_path& run) {
  tree_walk w;
  const uint64_t budget = std::max<uint64_t>(o.budget, 1);
  uint64_t random_runs = 0;
  double random_leaves = 0;  // the sum of the random runs' estimates
  auto make = [&](const std::vector<size_t>& prefix, std::optional<uint64_t> seed) {
    std::optional<tree_path> p = run(prefix, seed);
    if (!p) {
      w.failed = true;
      return false;
    }
    if (seed) {
      ++random_runs;
      random_leaves += leaves_through(*p);
    }
    w.runs.push_back(std::move(*p));
    return true;
  };
  auto random_run = [&] { return make({}, run_seed(o.seed, random_runs)); };

  const bool walked = [&] {
    if (!make({}, std::nullopt)) return false;  // the in-order run
    if (w.runs[0].options.empty()) {            // no decision anywhere: a tree of one path
      w.counted = {0};
      return true;
    }
    // Depth first from the in-order run, `up_to` paths in all.
    std::vector<size_t> leaves{0};
    std::optional<std::vector<size_t>> next = next_prefix(w.runs[0]);
    auto depth_first = [&](uint64_t up_to) {
      while (next && leaves.size() < up_to) {
        if (!make(*next, std::nullopt)) return false;
        leaves.push_back(w.runs.size() - 1);
        next = next_prefix(w.runs.back());
      }
      return !next;
    };
    // Most trees are small: a quarter of the budget walks them whole, with no estimate.
    if (depth_first(std::max<uint64_t>(1, budget / 4))) {
      w.counted = std::move(leaves);
      return true;
    }
    if (w.failed) return false;
    const uint64_t probes = std::min(o.probes, budget - std::min(budget, w.runs.size()));
    for (uint64_t i = 0; i < probes; ++i)
      if (!random_run()) return false;
    const double estimate = probes ? random_leaves / double(probes) : leaves_through(w.runs[0]);
    // A few paths estimate a tree loosely (the catalogue's 360 and 630 came out 390 and 738):
    // a tree estimated within the budget is walked on, and one larger than estimated still
    // leaves a quarter of the budget to runs at random.
    if (estimate > double(budget)) return false;
    if (!depth_first(std::max<uint64_t>(1, budget - budget / 4))) return false;
    w.counted = std::move(leaves);  // the probes' paths are among them
    return true;
  }();
  if (walked) {
    w.exhaustive = true;
    w.tree_estimate = double(w.counted.size());
  } else if (!w.failed) {
    // Every run made counts; runs at random fill the budget.
    while (w.runs.size() < budget && random_run()) {
    }
  }
  if (!w.exhaustive) {
    w.counted.clear();
    for (size_t i = 0; i < w.runs.size(); ++i) w.counted.push_back(i);
    if (random_runs)
      w.tree_estimate = random_leaves / double(random_runs);
    else if (!w.runs.empty())
      w.tree_estimate = leaves_through(w.runs.front());
  }
  std::set<std::string> paths;
  for (size_t i : w.counted) paths.insert(format_choices(w.runs[i].taken));
  w.distinct = paths.size();
  return w;
}

uint64_t run_seed(uint64_t seed, uint64_t n) {  // splitmix64
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (n + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::string format_choices(const std::vector<size_t>& c) {
  size_t n = c.size();
  while (n > 0 && c[n - 1] == 0) --n;  // trailing in-order choices are the default
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (i) s += '.';
    s += std::to_string(c[i]);
  }
  return s.empty() ? "0" : s;
}

std::vector<size_t> parse_choices(const std::string& s) {
  const char* what = "choices are numbers separated by dots, e.g. 0.2.1";
  std::vector<size_t> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t used = 0;
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) throw std::invalid_argument(what);
    try {
      out.push_back(std::stoul(s.substr(i), &used));
    } catch (const std::out_of_range&) {
      throw std::invalid_argument(what);
    }
    i += used;
    if (i < s.size() && s[i++] != '.') throw std::invalid_argument(what);
  }
  if (out.empty()) throw std::invalid_argument(what);
  return out;
}

}  // namespace p2psim::litmus
