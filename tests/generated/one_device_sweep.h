// A sweep of the simplest machines, which random generation seldom draws: one DMA engine or
// GPU alone on a root port of one socket, reading host memory, for every platform preset and
// every combination of a few tag counts, read request sizes and payload sizes (and one write
// each). A read that its tags limit is where a requester's timing shows most plainly: before
// completion bursts were taken in by the requests they end, 188 of these reads were more
// than 1% off at burst fidelity, up to 24% fast (docs/testing.md, "The one-device sweep").
#pragma once

#include <string>
#include <vector>

#include "sim/generate/generate.h"

namespace p2psim::oracle {

struct sweep_case {
  std::string name;  // "sweep-<index>"
  std::string summary;
  std::string topology_yaml, scenario_yaml;  // the scenario refers to NAME.topology.yaml
};

// Every case of the sweep over these platforms (platforms_in), in a fixed order.
std::vector<sweep_case> one_device_sweep(
    const std::vector<p2psim::generate::platform_facts>& platforms);

}  // namespace p2psim::oracle
