#include "models/nvme/nvme_device.h"

#include "models/nvme/nvme_controller.h"

namespace p2psim::nvme {
namespace {

class nvme_device : public device::device_model {
 public:
  explicit nvme_device(std::unique_ptr<nvme_controller> c) : m_controller(std::move(c)) {}
  sc_core::sc_module& module() override { return *m_controller; }
  transport::pcie_port& port() override { return m_controller->port; }
  dma::dma_initiator* initiator() override { return m_controller.get(); }
  std::vector<stats::reading> stats(uint64_t simulated_ps) const override {
    return stats::read(nvme_stat_table(), m_controller->stats(), simulated_ps);
  }

 private:
  std::unique_ptr<nvme_controller> m_controller;
};

class nvme_factory : public device::device_factory {
 public:
  std::string kind() const override { return "nvme"; }
  std::unique_ptr<device::device_model> elaborate(const device::device_config& settings,
                                                  const device::placement& at) const override {
    nvme_params p;
    static_cast<nvme_spec&>(p) = *device::spec_of<nvme_spec>(settings);
    p.bdf = at.bdf;
    p.bar0 = at.bar0;
    p.requester = at.requester;
    return std::make_unique<nvme_device>(
        std::make_unique<nvme_controller>(at.name.c_str(), p, *at.pool, *at.log));
  }
  std::vector<const stats::declaration*> stat_declarations() const override {
    return stats::declarations(nvme_stat_table());
  }
};

}  // namespace

const device::device_factory& factory() {
  static const nvme_factory f;
  return f;
}

}  // namespace p2psim::nvme
