#include "models/gpu/gpu_device.h"

namespace p2psim::gpu {
namespace {

// Not a counter of the model's: how much of VRAM the simulation backs with memory.
const stats::declaration& vram_allocated() {
  static const stats::declaration d{
      "vram_allocated_bytes", stats::unit::bytes,
      "VRAM the simulation has backed with host memory (chunks written so far)."};
  return d;
}

using gpu_device = device::initiator_model<gpu>;

std::vector<stats::reading> gpu_stats_of(const gpu& g, uint64_t simulated_ps) {
  auto out = stats::read(gpu_stat_table(), g.stats(), simulated_ps);
  out.push_back({&vram_allocated(), g.vram().allocated_bytes(), 0, false});
  return out;
}

class gpu_factory : public device::device_factory {
 public:
  std::string kind() const override { return "gpu"; }
  std::unique_ptr<device::device_model> elaborate(const device::device_config& settings,
                                                  const device::placement& at) const override {
    gpu_params p;
    static_cast<gpu_spec&>(p) = *device::spec_of<gpu_spec>(settings);
    p.bdf = at.bdf;
    p.bar0 = at.bar0;
    p.bar1 = at.bars.at(0);
    p.cpl_bytes = at.control.mps;
    p.rcb = at.control.rcb;
    p.copy = at.requester;
    return std::make_unique<gpu_device>(
        std::make_unique<gpu>(at.name.c_str(), p, *at.pool, *at.log, *at.order), gpu_stats_of);
  }
  std::vector<const stats::declaration*> stat_declarations() const override {
    auto out = stats::declarations(gpu_stat_table());
    out.push_back(&vram_allocated());
    return out;
  }
};

}  // namespace

const device::device_factory& factory() {
  static const gpu_factory f;
  return f;
}

gpu* gpu_of(device::device_model& d) {
  auto* g = dynamic_cast<gpu_device*>(&d);
  return g ? &g->model() : nullptr;
}

}  // namespace p2psim::gpu
