// Which runs of a litmus test to make. A run is a path through a tree: at each decision the
// ordering table or the GPU memory model leaves open, it takes one of the alternatives. The
// tree is not known in advance; each run tells the decisions on its own path and how many
// alternatives each had. Plain C++: the runs themselves are the caller's (a child process each
// in `explore`, a made-up tree in the unit tests).
//
// The walk decides on the whole tree, not on its first run. It walks depth first from the
// in-order run; a tree that a quarter of the budget covers is done. Otherwise a few runs at
// random estimate the tree's size (Knuth's estimator: the product of the alternatives along a
// path taken uniformly at random has the tree's path count as its expectation). A tree
// estimated within the budget is walked on, for three quarters of the budget at most; when it
// is larger than that, or estimated larger than the budget, runs at random take the rest, so
// the runs never all sit in one corner of a large tree.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace p2psim::litmus {

// What one run chose: `taken[i]` of `options[i]` alternatives at its i-th decision.
struct tree_path {
  std::vector<size_t> taken, options;
};

// Makes one run that follows `prefix` and then takes alternative 0 (no seed) or chooses at
// random from `seed`. Returns nothing when the run failed: the walk stops there.
using run_path = std::function<std::optional<tree_path>(const std::vector<size_t>& prefix,
                                                        std::optional<uint64_t> seed)>;

struct walk_options {
  uint64_t budget = 200;  // counted runs at most
  uint64_t seed = 1;
  uint64_t probes = 8;  // random runs that estimate the tree before deciding
};

struct tree_walk {
  std::vector<tree_path> runs;  // every run made, in order
  std::vector<size_t> counted;  // the runs the outcome counts are taken from (indices)
  bool exhaustive = false;      // every path of the tree is among the counted runs, once each
  bool failed = false;          // a run failed; the walk stopped after it
  double tree_estimate = 1;     // leaves: exact when exhaustive, else Knuth's estimate
  uint64_t distinct = 0;        // different paths among the counted runs
  // The share of the tree's paths the counted runs took: 1 when exhaustive; else distinct
  // over the estimate, at most 1 (an estimate can fall short of the paths already seen).
  double explored_share() const;
};

tree_walk walk_tree(const walk_options& o, const run_path& run);

// The seed of the n-th random run of a walk seeded `seed` (independent streams per run).
uint64_t run_seed(uint64_t seed, uint64_t n);

// "0.2.1" <-> {0, 2, 1}; trailing zeros (in-order choices) are left off; parse throws
// std::invalid_argument.
std::string format_choices(const std::vector<size_t>& c);
std::vector<size_t> parse_choices(const std::string& s);

}  // namespace p2psim::litmus
