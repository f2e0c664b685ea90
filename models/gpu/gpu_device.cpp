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

class gpu_device : public device::device_model {
 public:
  explicit gpu_device(std::unique_ptr<gpu> g) : m_gpu(std::move(g)) {}
  gpu& model() { return *m_gpu; }
  sc_core::sc_module& module() override { return *m_gpu; }
  transport::pcie_port& port() override { return m_gpu->port; }
  dma::dma_initiator* initiator() override { return m_gpu.get(); }
  std::vector<stats::reading> stats(uint64_t simulated_ps) const override {
    auto out = stats::read(gpu_stat_table(), m_gpu->stats(), simulated_ps);
    out.push_back({&vram_allocated(), m_gpu->vram().allocated_bytes(), 0, false});
    return out;
  }

 private:
  std::unique_ptr<gpu> m_gpu;
};

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
        std::make_unique<gpu>(at.name.c_str(), p, *at.pool, *at.log, *at.order));
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
