// Runs a scenario's program in simulated time (SystemC shell around the pure driver models):
// each step calls the CUDA API or the third-party driver as its process, then waits out what
// the call cost (pinning takes time: guide 5.1); DMA steps program the DMA engine from the
// page table and verify every byte against VRAM. The free callback of the third-party driver
// waits in simulated time for the region's in-flight DMA (guide 6.4).
#pragma once

#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>
#include <systemc>

#include "models/driver/cuda/cuda.h"
#include "models/driver/nvidia/nvidia_driver.h"
#include "models/driver/peer/regcache.h"
#include "sim/core/copy_engine_executor.h"
#include "sim/core/program.h"
#include "sim/core/system.h"

namespace p2psim::core {

// "-EINVAL", "-ENOMEM", ... for a negative errno; "ok" for 0.
std::string errno_name(int r);

class program_runner : public sc_core::sc_module {
 public:
  program_runner(sc_core::sc_module_name name, fabric_system& sys, const program_spec& p,
                 uint64_t seed);
  ~program_runner() override;
  // Steps, driver and cache counters, BAR1 use per GPU, DMA results (for JSON and report).
  nlohmann::json results() const;
  // One line per failed expectation or lost byte; empty when the program ran as expected.
  const std::vector<std::string>& errors() const { return m_errors; }
  // The step it was in if it never finished (empty when it did).
  const std::string& stuck_at() const { return m_doing; }

 private:
  struct buffer {
    uint64_t va = 0, size = 0;
    int pid = 0;
    bool live = true;  // false once freed: calls on it still go to the API (and fail there)
  };
  // One GPU's BAR1 at its peak use: what the pins asked for, what their 64 KiB pages add up
  // to, and what BAR1 maps (less, when pins share pages: guide 4.7).
  struct bar1_peak {
    uint64_t used = 0;       // nvidia-smi's Used: the reserved region plus mapped pages
    uint64_t requested = 0;  // bytes the live pins asked for
    uint64_t pinned = 0;     // the same pins rounded out to 64 KiB pages, each pin counted
    uint64_t mapped = 0;     // BAR1 pages mapped, a shared page once
  };
  struct dma_result {
    std::string name;
    bool write = true;
    uint64_t bytes = 0, landed = 0, failed = 0, mismatched = 0;
    uint64_t lost = 0;       // posted writes dropped by a link that went down
    uint64_t timed_out = 0;  // read bytes whose completions never came
    // Bytes that reached memory they were not allowed to reach: more of the new data in the
    // destination than the fabric says landed, or bytes that are neither old nor new.
    uint64_t escaped = 0;
    uint64_t stale = 0;  // read bytes that differ from what the program had put there
    uint64_t first_ps = 0, last_ps = 0;
    bool done = false;
  };

  void main();
  std::string run_step(const step_spec& s);
  std::string cuda_step(const step_spec& s, int pid);
  std::string dma(const step_spec& s, int pid, size_t result_index);
  std::string memcpy_step(const step_spec& s);
  uint64_t verify(const buffer& b, uint64_t offset, uint64_t length, uint64_t local, bool write);
  // Where a buffer's bytes live in VRAM, page piece by page piece (kept across a free).
  struct vram_piece {
    int gpu = 0;
    uint64_t vram = 0, length = 0;
  };
  std::vector<vram_piece> vram_pieces(const buffer& b, uint64_t offset, uint64_t length) const;
  void write_gpu(const std::vector<vram_piece>& where, const std::vector<uint8_t>& bytes);
  uint64_t escaped_bytes(const std::vector<vram_piece>& where, const std::vector<uint8_t>& now,
                         const std::vector<uint8_t>& before, uint64_t landed);
  void wait_driver_time();
  void sample_bar1();
  // The registration cache of a process: user space, so each process has its own (guide 5.2).
  peer::regcache& cache_of(int pid);
  int pid_of(const std::string& process) const;

  fabric_system& m_sys;
  const program_spec& m_spec;
  uint64_t m_seed;
  nv::nvidia_driver m_driver;
  pci_dev m_peer_dev;
  std::unique_ptr<peer::kmd> m_kmd;
  std::map<int, std::unique_ptr<peer::regcache>> m_caches;  // by pid
  uint64_t m_peak_cached_bytes = 0;                         // all processes' caches together
  dma_engine::dma_engine* m_engine = nullptr;
  std::map<std::string, buffer> m_buffers;
  std::map<int, CUcontext> m_contexts;                   // the last context each process created
  std::map<std::string, std::vector<uint8_t>> m_images;  // what cuMemcpy put in each buffer
  std::unique_ptr<copy_engine_executor> m_copies;
  struct registration {
    peer::kmd_region* region = nullptr;
    int pid = 0;  // whose cache holds it
  };
  std::map<std::string, registration> m_registered;  // by buffer
  std::map<std::string, size_t> m_named_dma;
  std::vector<dma_result> m_dmas;
  std::map<std::string, bar1_peak> m_bar1_peak;  // per GPU
  sc_core::sc_event m_dma_done;
  nlohmann::json m_steps = nlohmann::json::array();
  std::vector<std::string> m_errors;
  std::string m_doing = "starting";
};

}  // namespace p2psim::core
