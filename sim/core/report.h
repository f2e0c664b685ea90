// The text report of `p2psim run`, in the layouts users know from p2pBandwidthLatencyTest and
// nvbandwidth: device x device matrices per operation (GB/s, GB = 1e9 bytes; latency in us),
// and, for scenarios over several topologies, one table comparing them. A scenario's
// `matrix` gets p2pBandwidthLatencyTest's layout besides: its devices in the listed order.
#pragma once

#include <ostream>
#include <vector>

#include "sim/core/result.h"
#include "sim/core/scenario.h"

namespace p2psim::core {

void print_run(std::ostream& os, const run_result& r,
               const transfer_matrix* scenario_matrix = nullptr);
void print_comparison(std::ostream& os, const std::vector<run_result>& runs);

}  // namespace p2psim::core
