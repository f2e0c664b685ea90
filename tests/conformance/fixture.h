// A world for driver-level conformance tests: an NVIDIA driver model with N GPUs (each its
// own BAR1 page table, VRAM backing store and RDMA visibility model), installed as the driver
// of this test process, and a current process id. Every knob can be overridden; the defaults
// are Kepler's smallest BAR1 geometry (guide 5.5: 256 MB, 32 MB of it reserved) and a VRAM
// small enough to exhaust.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/driver/kernel/kernel.h"
#include "models/driver/nvidia/nvidia_driver.h"
#include "models/gpu/bar1_page_table.h"
#include "models/gpu/rdma_visibility.h"
#include "models/memory/backing_store.h"

namespace p2psim::test {

struct gpu_config {
  uint64_t bar1_bytes = 256ull << 20;
  uint64_t bar1_reserved = 32ull << 20;
  uint64_t vram_bytes = 64ull << 20;
  uint64_t bar1_bus_base = 0;  // 0: 0x4000'0000'0000 + ordinal * 64 GiB
  std::string name;            // empty: "gpu<ordinal>"
  // What kernels see of RDMA writes (guide 5.7), with this ordering attribute; nullopt: not
  // modelled (gpu_resources::visibility stays nullptr).
  std::optional<gpu::writes_ordering> rdma_ordering = gpu::writes_ordering::owner;
};

struct world_config {
  int gpus = 1;
  gpu_config gpu;                // for every GPU ...
  std::vector<gpu_config> each;  // ... unless overridden here, by ordinal
  nv::driver_config driver;
  kernel::pid_t pid = 1;  // the current process (0 would be a kernel thread)
};

inline world_config gpus(int n) {
  world_config c;
  c.gpus = n;
  return c;
}

class world {
 public:
  static constexpr uint64_t default_bar1_base = 0x4000'0000'0000ull;
  static constexpr uint64_t bar1_spacing = 64ull << 30;

  explicit world(const world_config& c = {}) : m_config(c) {
    m_driver = std::make_unique<nv::nvidia_driver>(c.driver);
    for (int i = 0; i < c.gpus; ++i) {
      const gpu_config& g = size_t(i) < c.each.size() ? c.each[i] : c.gpu;
      m_bar1.push_back(std::make_unique<gpu::bar1_page_table>(g.bar1_bytes, g.bar1_reserved));
      m_vram.push_back(std::make_unique<memory::backing_store>(g.vram_bytes));
      nv::gpu_resources r;
      r.name = g.name.empty() ? "gpu" + std::to_string(i) : g.name;
      for (size_t k = 0; k < r.uuid.size(); ++k) r.uuid[k] = uint8_t(0x10 * (i + 1) + k);
      r.bar1 = m_bar1.back().get();
      r.bar1_bus_base =
          g.bar1_bus_base ? g.bar1_bus_base : default_bar1_base + uint64_t(i) * bar1_spacing;
      r.vram = m_vram.back().get();
      m_visibility.push_back(g.rdma_ordering
                                 ? std::make_unique<gpu::rdma_visibility>(*r.vram, *g.rdma_ordering)
                                 : nullptr);
      r.visibility = m_visibility.back().get();
      if (r.visibility) r.visibility->set_kernels_observe(true);  // the tests play the kernel
      m_driver->add_gpu(r);
    }
    m_os = std::make_unique<kernel::os>(*m_driver);
    m_in.emplace(*m_os);
    m_as.emplace(c.pid);
  }
  ~world() {
    // Unbound and gone before the driver, and the driver before the BAR1 tables and VRAM it
    // points into.
    m_as.reset();
    m_in.reset();
    m_os.reset();
    m_driver.reset();
  }
  world(const world&) = delete;
  world& operator=(const world&) = delete;

  nv::nvidia_driver& driver() { return *m_driver; }
  kernel::os& os() { return *m_os; }
  gpu::bar1_page_table& bar1(int gpu) { return *m_bar1.at(gpu); }
  memory::backing_store& vram(int gpu) { return *m_vram.at(gpu); }
  gpu::rdma_visibility* visibility(int gpu) { return m_visibility.at(gpu).get(); }
  const nv::gpu_resources& gpu(int ordinal) const { return m_driver->gpu(ordinal); }
  kernel::pid_t pid() const { return m_config.pid; }

 private:
  world_config m_config;
  std::vector<std::unique_ptr<gpu::bar1_page_table>> m_bar1;
  std::vector<std::unique_ptr<memory::backing_store>> m_vram;
  std::vector<std::unique_ptr<gpu::rdma_visibility>> m_visibility;  // over m_vram
  std::unique_ptr<nv::nvidia_driver> m_driver;
  std::unique_ptr<kernel::os> m_os;  // over m_driver, bound for the world's life
  std::optional<kernel::running_in> m_in;
  std::optional<kernel::as_process> m_as;
};

}  // namespace p2psim::test
