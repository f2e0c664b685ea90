#include "sim/bench/pin_cycles.h"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "models/driver/cuda/cuda.h"
#include "models/driver/kernel/kernel.h"
#include "models/driver/nvidia/nv-p2p.h"
#include "models/driver/nvidia/nvidia_driver.h"
#include "models/driver/peer/kmd.h"
#include "models/driver/peer/regcache.h"
#include "models/gpu/bar1_page_table.h"
#include "models/memory/backing_store.h"

namespace p2psim::bench {

namespace {

using clock = std::chrono::steady_clock;
constexpr uint64_t pin_bytes = 64 * 1024;

[[noreturn]] void failed(const char* call, uint64_t cycle, long long code) {
  throw std::runtime_error(fmt::format("{} returned {} in cycle {}", call, code, cycle));
}

// CPU time of this process: unlike the wall, it does not count time other work on a shared
// machine took from the bench.
double cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e9 + double(t.tv_nsec);
}

// Resident memory now (not the peak: growth after the first checkpoint must show).
uint64_t rss_kib() {
  std::ifstream f("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * uint64_t(sysconf(_SC_PAGESIZE)) / 1024;
}

void never_called(void*) {}  // get_put never frees pinned memory

// The revoke cycle's free callback: what the guide's does (6.4).
void free_table(void* data) {
  nvidia_p2p_free_page_table(*static_cast<nvidia_p2p_page_table_t**>(data));
}

// One GPU's driver in an OS of its own, bound for the benchmark's life, and a current CUDA
// context on the GPU of its one process.
struct bench_world {
  gpu::bar1_page_table bar1{256ull << 20, 32ull << 20};
  memory::backing_store vram{1ull << 30};
  nv::nvidia_driver driver;
  kernel::os os{driver};
  kernel::running_in in{os};
  kernel::as_process as{1};
  pci_dev nic{"nic0", 0x0400, nullptr};
  peer::kmd kmd{&nic, true};  // with nvidia_p2p_dma_map_pages, as under an IOMMU
  CUcontext ctx = nullptr;

  bench_world() {
    nv::gpu_resources r;
    r.name = "gpu0";
    r.bar1 = &bar1;
    r.bar1_bus_base = 0x4000'0000'0000ull;
    r.vram = &vram;
    driver.add_gpu(r);
    if (cuInit(0) != CUDA_SUCCESS || cuCtxCreate(&ctx, 0, 0) != CUDA_SUCCESS)
      throw std::runtime_error("no CUDA context on the benchmark's GPU");
  }
  bench_world(const bench_world&) = delete;
  bench_world& operator=(const bench_world&) = delete;

  CUdeviceptr alloc(uint64_t cycle) {
    CUdeviceptr p = 0;
    if (CUresult r = cuMemAlloc(&p, pin_bytes)) failed("cuMemAlloc", cycle, r);
    return p;
  }
  void free(CUdeviceptr p, uint64_t cycle) {
    if (CUresult r = cuMemFree(p)) failed("cuMemFree", cycle, r);
  }
  nvidia_p2p_page_table_t* get_pages(uint64_t p2p, uint32_t va_space, CUdeviceptr p,
                                     void (*cb)(void*), void* data, uint64_t cycle) {
    nvidia_p2p_page_table_t* t = nullptr;
    if (int r = nvidia_p2p_get_pages(p2p, va_space, p, pin_bytes, &t, cb, data))
      failed("nvidia_p2p_get_pages", cycle, r);
    return t;
  }
  void put_pages(uint64_t p2p, uint32_t va_space, CUdeviceptr p, nvidia_p2p_page_table_t* t,
                 uint64_t cycle) {
    if (int r = nvidia_p2p_put_pages(p2p, va_space, p, t)) failed("nvidia_p2p_put_pages", cycle, r);
  }
};

// Runs `step(cycle)` n times, timing the windows between checkpoints and noting what the
// models hold at each.
template <class Step>
pin_run measure(bench_world& w, const std::string& kind, uint64_t n, Step step) {
  pin_run r;
  r.kind = kind;
  r.cycles = n;
  const auto start = clock::now();
  auto window_start = start;
  double window_cpu = cpu_ns();
  uint64_t done = 0;
  for (uint64_t at : pin_checkpoints(n)) {
    const uint64_t window = at - done;
    for (; done < at; ++done) step(done);
    const auto now = clock::now();
    const double cpu = cpu_ns();
    pin_checkpoint c;
    c.cycles = at;
    c.wall_seconds = std::chrono::duration<double>(now - start).count();
    c.ns_per_cycle = std::chrono::duration<double, std::nano>(now - window_start).count() / window;
    c.cpu_ns_per_cycle = (cpu - window_cpu) / double(window);
    c.rss_kib = rss_kib();
    c.live_pins = w.driver.live_pins();
    c.events_kept = w.driver.events().size();
    c.kmd_regions = w.kmd.regions().size();
    c.driver_contexts = w.driver.live_contexts();
    r.checkpoints.push_back(c);
    window_start = clock::now();  // the bookkeeping above is not a cycle's
    window_cpu = cpu_ns();
  }
  const nv::driver_counters& k = w.driver.counters();
  r.pins = k.pins;
  r.unpins = k.unpins;
  r.callbacks = k.callbacks;
  r.refused = k.refused;
  r.events_dropped = k.events_dropped;
  return r;
}

}  // namespace

pin_run run_pin_cycles(const std::string& kind, uint64_t n) {
  bench_world w;
  if (kind == "get_put") {
    const CUdeviceptr p = w.alloc(0);
    CUDA_POINTER_ATTRIBUTE_P2P_TOKENS t{};
    if (CUresult e = cuPointerGetAttribute(&t, CU_POINTER_ATTRIBUTE_P2P_TOKENS, p))
      failed("cuPointerGetAttribute", 0, e);
    return measure(w, kind, n, [&](uint64_t c) {
      nvidia_p2p_page_table_t* table =
          w.get_pages(t.p2pToken, t.vaSpaceToken, p, never_called, nullptr, c);
      w.put_pages(t.p2pToken, t.vaSpaceToken, p, table, c);
    });
  }
  if (kind == "alloc_free")  // tokens 0: the calling process's VA space, as the guide's kmd
    return measure(w, kind, n, [&](uint64_t c) {
      const CUdeviceptr p = w.alloc(c);
      w.put_pages(0, 0, p, w.get_pages(0, 0, p, never_called, nullptr, c), c);
      w.free(p, c);
    });
  if (kind == "revoke")
    return measure(w, kind, n, [&](uint64_t c) {
      const CUdeviceptr p = w.alloc(c);
      nvidia_p2p_page_table_t* table = nullptr;
      table = w.get_pages(0, 0, p, free_table, &table, c);
      w.free(p, c);  // the callback frees the table; the driver ends the pin after it
    });
  if (kind == "kmd") {
    const CUdeviceptr p = w.alloc(0);
    return measure(w, kind, n, [&](uint64_t c) {
      peer::kmd_region* region = nullptr;
      if (int e = w.kmd.pin(p, pin_bytes, &region)) failed("kmd pin", c, e);
      if (int e = w.kmd.unpin(region)) failed("kmd unpin", c, e);
    });
  }
  if (kind == "regcache") {  // a revoked entry is found stale by its buffer ID and dropped
    peer::regcache cache(w.kmd, {});
    return measure(w, kind, n, [&](uint64_t c) {
      const CUdeviceptr p = w.alloc(c);
      peer::kmd_region* region = nullptr;
      if (int e = cache.acquire(p, pin_bytes, &region)) failed("regcache acquire", c, e);
      cache.release(region);  // stays pinned (lazy unpinning) ...
      w.free(p, c);           // ... until the free callback revokes it
    });
  }
  throw std::invalid_argument("no pin cycle " + kind);
}

}  // namespace p2psim::bench
