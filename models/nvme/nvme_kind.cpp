#include "models/nvme/nvme_kind.h"

#include "models/nvme/nvme_spec.h"

namespace p2psim::nvme {
namespace {

class nvme_config : public device::config_of<nvme_config, nvme_spec> {
 public:
  static const params::table<nvme_spec>& table() { return nvme_spec_params(); }
  const device::device_kind& kind() const override { return nvme::kind(); }
  std::vector<device::bar_request> bars() const override { return {}; }  // BAR0 only
  uint64_t target_bytes() const override { return 0; }
  uint64_t local_bytes() const override { return spec.capacity_bytes; }
  std::string local_key() const override { return "capacity"; }
  std::vector<shown_setting> summary() const override { return {{"flash", "capacity"}}; }
};

class nvme_kind : public device::device_kind {
 public:
  std::string name() const override { return "nvme"; }
  std::string title() const override { return "NVMe SSD"; }
  bool initiates_dma() const override { return true; }
  graph_look look() const override { return {"cylinder", ""}; }
  std::unique_ptr<device::device_config> defaults() const override {
    return std::make_unique<nvme_config>();
  }
};

}  // namespace

const device::device_kind& kind() {
  static const nvme_kind k;
  return k;
}

}  // namespace p2psim::nvme
