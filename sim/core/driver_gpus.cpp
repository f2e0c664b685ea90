#include "sim/core/driver_gpus.h"

#include "sim/core/runner.h"

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
  // Which GPU may reach which (cuDeviceCanAccessPeer), as the fabric routes P2P.
  for (size_t i = 0; i < by_ordinal.size(); ++i)
    for (size_t j = 0; j < by_ordinal.size(); ++j)
      driver.set_peer_reachable(
          int(i), int(j),
          peer_reachable(sys.topology(), sys.addresses(), by_ordinal[i]->basename(),
                         by_ordinal[j]->basename()));
  return by_ordinal;
}

}  // namespace p2psim::core
