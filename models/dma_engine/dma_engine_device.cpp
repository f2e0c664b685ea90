#include "models/dma_engine/dma_engine_device.h"

#include <algorithm>

#include "models/dma_engine/dma_engine.h"

namespace p2psim::dma_engine {
namespace {

// Its on-board memory, if any, is exposed one to one through BAR2.
class engine_device : public device::initiator_model<dma_engine> {
 public:
  explicit engine_device(std::unique_ptr<dma_engine> e)
      : initiator_model(std::move(e), [](const dma_engine& m, uint64_t ps) {
          return stats::read(engine_stat_table(), m.stats(), ps);
        }) {}
  device::exposed_memory exposed() override {
    const pcie::window& bar2 = model().params().bar2;
    if (bar2.size == 0) return {};
    return {&model().local_memory(), bar2.base};
  }
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
    p.requester.command_bytes = spec.command_bytes;
    p.requester.command_bytes_per_ns = spec.command_rate_gbs;  // 1 GB/s is 1 byte per ns
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
