#include "sim/core/driver_gpus.h"

namespace p2psim::core {

std::vector<gpu::gpu*> add_gpus(nv::nvidia_driver& driver, fabric_system& sys) {
  std::vector<gpu::gpu*> by_ordinal;
  for (const auto& d : sys.topology().devices) {
    auto* g = sys.find_gpu(d.name);
    if (!g) continue;
    nv::gpu_resources r;
    r.name = d.name;
    for (size_t i = 0; i < r.uuid.size(); ++i)
      r.uuid[i] = uint8_t(i < d.name.size() ? d.name[i] : i);  // stable per GPU name
    r.bar1 = &g->bar1();
    r.bar1_bus_base = g->params().bar1.base;
    r.vram = &g->vram();
    r.visibility = &g->visibility();
    driver.add_gpu(r);
    by_ordinal.push_back(g);
  }
  return by_ordinal;
}

}  // namespace p2psim::core
