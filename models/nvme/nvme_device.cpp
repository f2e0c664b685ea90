#include "models/nvme/nvme_device.h"

#include "models/nvme/nvme_controller.h"

namespace p2psim::nvme {
namespace {

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
    return std::make_unique<device::initiator_model<nvme_controller>>(
        std::make_unique<nvme_controller>(at.name.c_str(), p, *at.pool, *at.log),
        [](const nvme_controller& c, uint64_t ps) {
          return stats::read(nvme_stat_table(), c.stats(), ps);
        });
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
