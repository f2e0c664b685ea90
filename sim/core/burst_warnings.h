// Where a burst-fidelity run approximates (docs/architecture.md, "Burst fidelity": the
// classes where burst fidelity is known to differ from TLP fidelity), said when it happens: a
// warning per link or socket interconnect that traffic crossed under such a condition, naming
// it and why.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace p2psim::topo {
struct topology;
}

namespace p2psim::core {

class fabric_system;

// "link NAME: ..." and "interconnect NAME: ..." lines; `stats` is the run's stats dump (for the
// requesters' tag stalls).
std::vector<std::string> burst_warnings(const fabric_system& sys, const topo::topology& t,
                                        const nlohmann::json& stats);

}  // namespace p2psim::core
