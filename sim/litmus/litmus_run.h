// One run of a litmus test in this process (SystemC elaborates once per process): the
// fabric is built, each location placed (GPU memory is allocated with cuMemAlloc and pinned
// with nvidia_p2p_get_pages, as a peer driver would), the agents run their programs, and the
// registers and final memory are read back. The fabric is built with `order`: its rules are
// the table in force, its choice source decides the table's Y/N cases and what a running GPU
// kernel sees of RDMA writes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/pcie/order_policy.h"
#include "sim/litmus/litmus_spec.h"
#include "sim/topology/topology.h"

namespace p2psim::litmus {

struct run_outcome {
  std::map<std::string, value> values;  // every register, and the locations the condition names
  std::vector<std::string> blocked;     // agents that never finished (never launched, ...)
  std::string error;                    // a problem that makes the run meaningless
  double simulated_ns = 0;
  uint64_t tlps = 0;
};

// Devices, kinds, memory sizes against the loaded topology -> config::error.
void check_litmus(const litmus_spec& t, const topo::topology& topo);

run_outcome run_once(const litmus_spec& t, const topo::topology& topo,
                     const pcie::order_policy& order);

// "r0=1 r1=0 flag=1": the outcome's values in a fixed order (registers, then locations).
std::string outcome_key(const litmus_spec& t, const run_outcome& o);

}  // namespace p2psim::litmus
