#include "sim/core/stat_tables.h"

#include <fmt/format.h>

#include "models/dma/dma_requester.h"
#include "models/dma_engine/dma_engine.h"
#include "models/gpu/gpu.h"
#include "models/iommu/iommu.h"
#include "models/link/link_channel.h"
#include "models/root_complex/root_complex.h"
#include "models/switch/pcie_switch.h"

namespace p2psim::core {
namespace {

template <class Stats>
std::string markdown(const stats::table<Stats>& t) {
  std::string out = "| Key | Unit | Meaning |\n| --- | --- | --- |\n";
  for (const auto& s : t)
    out += fmt::format("| `{}` | {} | {} |\n", s.key, stats::to_string(s.unit), s.description);
  return out;
}

}  // namespace

std::map<std::string, std::string> stat_tables_markdown() {
  return {
      {"links", markdown(link::channel_stat_table())},
      {"switches", markdown(pcie_switch::switch_stat_table())},
      {"root_complexes", markdown(root_complex::rc_stat_table())},
      {"devices.gpu", markdown(gpu::gpu_stat_table())},
      {"devices.dma_engine", markdown(dma_engine::engine_stat_table())},
      {"devices.requester", markdown(dma::requester_stat_table())},
      {"devices.iommu", markdown(iommu::iommu_stat_table())},
  };
}

}  // namespace p2psim::core
