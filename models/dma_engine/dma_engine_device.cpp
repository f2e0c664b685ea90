#include "models/dma_engine/dma_engine_device.h"

#include <algorithm>

#include "models/dma_engine/dma_engine.h"

namespace p2psim::dma_engine {
namespace {

class engine_device : public device::device_model {
 public:
  explicit engine_device(std::unique_ptr<dma_engine> e) : m_engine(std::move(e)) {}
  sc_core::sc_module& module() override { return *m_engine; }
  transport::pcie_port& port() override { return m_engine->port; }
  dma::dma_initiator* initiator() override { return m_engine.get(); }
  device::exposed_memory exposed() override {
    if (m_engine->params().bar2.size == 0) return {};
    return {&m_engine->local_memory(), m_engine->params().bar2.base};
  }
  std::vector<stats::reading> stats(uint64_t simulated_ps) const override {
    return stats::read(engine_stat_table(), m_engine->stats(), simulated_ps);
  }

 private:
  std::unique_ptr<dma_engine> m_engine;
};

class engine_factory : public device::device_factory {
 public:
  std::string kind() const override { return "dma_engine"; }
  std::unique_ptr<device::device_model> elaborate(const device::device_config& settings,
                                                  const device::placement& at) const override {
    const engine_spec& spec = *device::spec_of<engine_spec>(settings);
    engine_params p;
    static_cast<engine_spec&>(p) = spec;
    p.bdf = at.bdf;
    p.bar0 = at.bar0;
    p.bar2 = at.bars.at(0);
    p.local_memory_bytes = settings.local_bytes();
    // Serving peers' BAR2 accesses: on-board SRAM/DRAM, 100 ns to the first completion.
    p.local = {100, 0, at.control.mps, at.control.rcb};
    p.requester = at.requester;
    return std::make_unique<engine_device>(
        std::make_unique<dma_engine>(at.name.c_str(), p, *at.pool, *at.log));
  }
  std::vector<const stats::declaration*> stat_declarations() const override {
    return stats::declarations(engine_stat_table());
  }
};

}  // namespace

const device::device_factory& factory() {
  static const engine_factory f;
  return f;
}

}  // namespace p2psim::dma_engine
