// Runs a litmus test many times, each run in a child process of its own (SystemC elaborates
// once per process), and counts the outcomes. Which runs: sim/litmus/choice_tree.h (every
// order when the tree of choices fits the run budget, else at random from a seed). Every
// outcome keeps a witness: the list of choices that produced it, which `--choices` replays.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/pcie/ordering.h"
#include "sim/litmus/choice_tree.h"
#include "sim/litmus/litmus_spec.h"
#include "sim/topology/topology.h"

namespace p2psim::litmus {

struct explore_options {
  int runs = 0;  // budget; 0: the test's own `runs`, else default_runs
  int default_runs = 200;
  uint64_t seed = 1;
  std::optional<std::vector<size_t>> choices;  // replay exactly this run
  pcie::ordering_rules rules;                  // the table every run's fabric uses (--mutate)
};

struct outcome_count {
  std::string key;  // "r0=1 r1=0"
  bool matches = false;
  uint64_t count = 0;
  std::string witness;  // "0.2.1": the choices of the first run that gave it
};

struct test_result {
  std::vector<outcome_count> outcomes;  // in order of first appearance
  uint64_t runs = 0, matching = 0;
  bool exhaustive = false;
  uint64_t max_decisions = 0;  // the most Y/N decisions one run made
  double tree_estimate = 1;    // orders (paths) the test has: exact when exhaustive
  uint64_t distinct = 0;       // different orders among the runs
  double explored_share = 1;   // of the orders, those the runs took
  uint64_t processes = 0;      // runs made, those that estimated the tree included
  bool passed = false;
  std::string error;  // a run that could not complete
  double wall_seconds = 0;
  double simulated_ns = 0;  // of the first run
};

test_result explore(const litmus_spec& t, const topo::topology& topo, const explore_options& o);

}  // namespace p2psim::litmus
