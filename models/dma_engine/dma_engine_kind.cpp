#include "models/dma_engine/dma_engine_kind.h"

#include <algorithm>

#include "models/dma_engine/engine_spec.h"

namespace p2psim::dma_engine {
namespace {

class engine_config : public device::config_of<engine_config, engine_spec> {
 public:
  static const params::table<engine_spec>& table() { return engine_spec_params(); }
  const device::device_kind& kind() const override { return dma_engine::kind(); }
  std::vector<device::bar_request> bars() const override {
    return {{"BAR2", "bar2", spec.bar2_bytes, spec.bar2_address, true}};
  }
  uint64_t target_bytes() const override { return spec.bar2_bytes; }
  // BAR2 exposes the first bytes of local memory, so local memory is at least BAR2.
  uint64_t local_bytes() const override {
    return std::max(spec.local_memory_bytes, spec.bar2_bytes);
  }
  std::string local_key() const override {
    return spec.bar2_bytes > spec.local_memory_bytes ? "bar2" : "local_memory";
  }
};

class engine_kind : public device::device_kind {
 public:
  std::string name() const override { return "dma_engine"; }
  std::string title() const override { return "DMA engine"; }
  bool initiates_dma() const override { return true; }
  bool issues_atomics() const override { return true; }
  graph_look look() const override { return {"ellipse", ""}; }
  std::unique_ptr<device::device_config> defaults() const override {
    return std::make_unique<engine_config>();
  }
};

}  // namespace

const device::device_kind& kind() {
  static const engine_kind k;
  return k;
}

}  // namespace p2psim::dma_engine
