// The reference model of a litmus test: every outcome the spec allows, found by walking every
// state of the test's machine (machine.h), with no time, from the PCIe ordering table and the
// guide's GPU rules (5.7) written down a second time, independently of the simulator. The
// litmus runner holds the simulator to it both ways (docs/formats-litmus.md, "The reference
// model"): soundness, no simulated outcome outside the allowed set; completeness, every allowed
// outcome reached when every order was run, or the test says why it cannot be.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/litmus/litmus_spec.h"
#include "sim/litmus/reference/pcie_table.h"
#include "sim/topology/topology.h"

namespace p2psim::litmus::reference {

struct allowed_outcome {
  std::map<std::string, value> values;  // registers and the condition's locations
  bool matches = false;                 // satisfies the test's condition
  std::vector<std::string> witness;     // the steps of one execution that gives it (when asked)
};

struct model_result {
  std::map<std::string, allowed_outcome> outcomes;  // by outcome key ("f=1 d=0")
  uint64_t states = 0;                              // states walked
  // Every state was walked: `outcomes` is every allowed outcome. If not (more states than
  // max_states), it holds those found, by the walk and by random runs to an end.
  bool complete = false;
  uint64_t random_runs = 0;
  std::string error;  // not enumerated, and why
};

struct model_options {
  rule_set rules;
  bool witnesses = false;
  uint64_t max_states = 100'000;
  uint64_t random_runs = 200;  // after a walk that stopped at max_states
  uint64_t seed = 1;
};

model_result enumerate(const litmus_spec& t, const topo::topology& topo, const model_options& o);

// Whether the allowed outcomes meet the test's `expect` (forbidden: none matches; allowed: one
// does; required: all do). Of a result that is not complete, only "allowed" can be known.
bool meets_expectation(const litmus_spec& t, const model_result& r);

// The rules the model knows, by the names of `p2psim litmus --list-rules`.
const std::vector<std::string>& rule_names();

}  // namespace p2psim::litmus::reference
