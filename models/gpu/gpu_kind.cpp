#include "models/gpu/gpu_kind.h"

#include <algorithm>

#include "models/gpu/gpu_spec.h"

namespace p2psim::gpu {
namespace {

class gpu_config : public device::config_of<gpu_config, gpu_spec> {
 public:
  static const params::table<gpu_spec>& table() { return gpu_spec_params(); }
  const device::device_kind& kind() const override { return gpu::kind(); }
  std::vector<device::bar_request> bars() const override {
    return {{"BAR1", "bar1", spec.bar1_bytes, spec.bar1_address, false}};
  }
  std::optional<problem> check() const override {
    if (spec.bar1_reserved_bytes < spec.bar1_bytes) return std::nullopt;
    return problem{"bar1_reserved",
                   "bar1_reserved ({bar1_reserved}) must be smaller than bar1 ({bar1})"};
  }
  // Peers reach VRAM through BAR1 pages outside the driver-reserved region.
  uint64_t target_bytes() const override {
    return std::min(spec.bar1_bytes - spec.bar1_reserved_bytes, spec.vram_bytes);
  }
  uint64_t local_bytes() const override { return spec.vram_bytes; }
  std::string local_key() const override { return "vram"; }
  std::vector<shown_setting> summary() const override { return {{"BAR1", "bar1"}}; }
};

class gpu_kind : public device::device_kind {
 public:
  std::string name() const override { return "gpu"; }
  std::string title() const override { return "GPU"; }
  bool initiates_dma() const override { return true; }  // its copy engines
  bool issues_atomics() const override { return true; }
  graph_look look() const override { return {"box", "filled"}; }
  std::unique_ptr<device::device_config> defaults() const override {
    return std::make_unique<gpu_config>();
  }
};

}  // namespace

const device::device_kind& kind() {
  static const gpu_kind k;
  return k;
}

}  // namespace p2psim::gpu
