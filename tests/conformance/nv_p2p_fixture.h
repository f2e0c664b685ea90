// The nv-p2p conformance tests' world: allocations go through the driver model directly, so
// these tests depend on nothing but nv-p2p.h's contract.
#pragma once

#include <memory>
#include <vector>

#include "models/driver/nvidia/nv-p2p.h"
#include "models/driver/nvidia/nvidia_driver.h"
#include "tests/conformance/fixture.h"

namespace p2psim::test {

inline constexpr uint64_t k64 = 64 * 1024;  // one GPU page (GPU_BOUND_SIZE, guide 6.2)
inline void ignore_callback(void*) {}       // a free callback for pins that are never revoked

// A world with Kepler-sized BAR1s (256 MiB, 32 MiB reserved: guide 5.5) and 1 GiB of VRAM
// per GPU, whose current process is 100.
struct p2p_world : world {
  static constexpr uint64_t bar1_bytes = 256ull << 20;
  static constexpr uint64_t reserved_bytes = 32ull << 20;
  static constexpr uint64_t bar1_base = world::default_bar1_base;  // GPU 0's BAR1
  static constexpr uint64_t usable_pages = (bar1_bytes - reserved_bytes) / (64 * 1024);

  nv::nvidia_driver& driver;
  std::vector<gpu::bar1_page_table*> bar1;

  explicit p2p_world(int gpus = 1, nv::driver_config cfg = {})
      : world(config(gpus, cfg)), driver(world::driver()) {
    for (int i = 0; i < gpus; ++i) bar1.push_back(&world::bar1(i));
  }

  // A context and an allocation of `bytes` for process `pid` on `gpu`.
  uint64_t alloc(uint64_t bytes, kernel::pid_t pid = 100, int gpu = 0) {
    return *driver.mem_alloc(context(pid, gpu), bytes);
  }
  int context(kernel::pid_t pid, int gpu = 0) {
    for (int id = 1; id < 1000; ++id)
      if (auto* c = driver.find_context(id); c && c->pid == pid && c->gpu == gpu) return id;
    return driver.create_context(pid, gpu);
  }

 private:
  static world_config config(int gpus, const nv::driver_config& cfg) {
    world_config c;
    c.gpus = gpus;
    c.gpu.bar1_bytes = bar1_bytes;
    c.gpu.bar1_reserved = reserved_bytes;
    c.gpu.vram_bytes = 1ull << 30;
    c.driver = cfg;
    c.pid = 100;
    return c;
  }
};

// A free callback that does what the guide says (6.4): free the page table.
struct callback_state {
  nvidia_p2p_page_table_t* table = nullptr;
  int calls = 0;
  bool free_table = true;
  int put_pages_result = 1;  // set when the callback (wrongly) calls put_pages
  bool try_put_pages = false;
  bool bar1_mapped_inside = false;  // was the first page still mapped during the callback?
  gpu::bar1_page_table* bar1 = nullptr;
  uint64_t bar1_base = 0;
};

inline void record_callback(void* data) {
  auto* s = static_cast<callback_state*>(data);
  ++s->calls;
  if (s->bar1 && s->table)
    s->bar1_mapped_inside =
        s->bar1->translate(s->table->pages[0]->physical_address - s->bar1_base).has_value();
  if (s->try_put_pages) s->put_pages_result = nvidia_p2p_put_pages(0, 0, 0, s->table);
  if (s->free_table) nvidia_p2p_free_page_table(s->table);
}

}  // namespace p2psim::test
