// The declared statistics of every model (models/stats/stat.h), by the block of the results
// they appear in, as markdown tables for docs/formats-scenario.md ("Stats").
#pragma once

#include <map>
#include <string>

namespace p2psim::core {

// "links" (every link direction and interconnect direction), "switches", "root_complexes",
// "devices.<kind>" for every registered device kind, "devices.requester", "devices.iommu".
std::map<std::string, std::string> stat_tables_markdown();

}  // namespace p2psim::core
