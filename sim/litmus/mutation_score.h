// The mutation score of a litmus catalogue: for each rule of `p2psim litmus --list-rules`, the
// tests that fail with it turned off, and the GPUDirect RDMA topology classes they run on
// (guide 13.3, 5.4: 1 PCIe switches only, 2 a single CPU/IOH, 3 across QPI/UPI). A rule is
// covered when at least two tests on at least two classes fail without it: a single test, or
// tests of a single class, can pass for a reason of their own.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "sim/litmus/litmus_spec.h"
#include "sim/topology/topology.h"

namespace p2psim::litmus {

struct rule_kills {
  std::string rule;
  std::vector<std::string> tests;  // failed with the rule off (until it was covered)
  std::set<int> classes;           // the topology classes of those tests
  bool killed() const { return !tests.empty(); }
  bool covered() const { return tests.size() >= 2 && classes.size() >= 2; }
};

// The class of the paths a test exercises: the farthest between an agent's device and a
// location's memory in another device, 1 to 3; for a test of host memory alone, the farthest
// from a device to a socket; 0 when no pair crosses the fabric.
int test_topology_class(const litmus_spec& t, const topo::topology& topo);

}  // namespace p2psim::litmus
