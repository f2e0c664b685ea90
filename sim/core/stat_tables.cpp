#include "sim/core/stat_tables.h"

#include <fmt/format.h>

#include "models/device/factories.h"
#include "models/device/registry.h"
#include "models/dma/dma_requester.h"
#include "models/iommu/iommu.h"
#include "models/link/link_channel.h"
#include "models/root_complex/root_complex.h"
#include "models/switch/pcie_switch.h"

namespace p2psim::core {
namespace {

std::string markdown(const std::vector<const stats::declaration*>& ds) {
  std::string out = "| Key | Unit | Meaning |\n| --- | --- | --- |\n";
  for (const auto* s : ds)
    out += fmt::format("| `{}` | {} | {} |\n", s->key, stats::to_string(s->unit), s->description);
  return out;
}

template <class Stats>
std::string markdown(const stats::table<Stats>& t) {
  return markdown(stats::declarations(t));
}

}  // namespace

std::map<std::string, std::string> stat_tables_markdown() {
  std::map<std::string, std::string> tables{
      {"links", markdown(link::channel_stat_table())},
      {"switches", markdown(pcie_switch::switch_stat_table())},
      {"root_complexes", markdown(root_complex::rc_stat_table())},
      {"devices.requester", markdown(dma::requester_stat_table())},
      {"devices.iommu", markdown(iommu::iommu_stat_table())},
  };
  for (const auto* k : device::kinds())  // "devices.gpu": each kind's own
    tables["devices." + k->name()] = markdown(device::factory_for(k->name()).stat_declarations());
  return tables;
}

}  // namespace p2psim::core
