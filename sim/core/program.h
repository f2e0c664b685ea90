// A scenario's program: simulated processes calling the CUDA driver API and a third-party
// driver (pin / unpin through its registration cache, DMA into and out of pinned GPU
// memory), step by step in simulated time. Parsed here; run by program_runner.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/reader.h"
#include "sim/config/source_loc.h"
#include "sim/topology/topology.h"

namespace p2psim::core {

struct driver_spec {           // the NVIDIA driver model (models/driver/nvidia)
  bool bar1_sharing = true;    // CUDA 7.0+; false: CUDA 6.0 (guide 4.7, 4.8)
  bool null_callback = false;  // drivers before R535 accepted NULL (guide 4.2)
  double pin_ns = 10'000;      // per nvidia_p2p_get_pages (guide 5.1: up to milliseconds)
  double pin_page_ns = 1'000;  // plus per 64 KiB page
  double unpin_ns = 5'000;
};

struct peer_spec {     // the DMA device's kernel driver and registration cache (models/driver/peer)
  std::string device;  // a DMA engine of the topology
  std::string dma_map = "auto";  // auto (when its IOMMU translates) | true | false
  bool cache = true;             // registration cache with lazy unpinning
  bool tag_check = true;         // buffer-ID check on every reuse (guide 6.5)
  uint64_t max_pinned = 0;       // bytes per process; 0: only BAR1 exhaustion evicts
  uint64_t max_entries = 0;      // regions per process; 0: no limit
  std::string policy = "lru";    // which unused region is evicted first: lru | fifo
  bool wait_in_callback = true;  // false: a driver that does not wait for in-flight DMA
  config::source_loc loc;
};

// One call of the program. `expect` is what it must return ("ok" = CUDA_SUCCESS or 0).
struct step_spec {
  std::string process;  // "" for sleep / wait steps
  std::string call;     // cuInit, cuCtxCreate, cuCtxDestroy, cuMemAlloc, cuMemFree,
                        // cuPointerSetAttribute, cuMemcpyHtoD, cuMemcpyDtoH,
                        // cuMemcpyDtoD, cuCtxSynchronize, register, deregister, dma,
                        // wait_dma, sleep, exit; the fault link_down
  std::string device;   // cuCtxCreate: a GPU; link_down: the node below the link
  std::string buffer;   // the name a cuMemAlloc gave
  std::string to;       // cuMemcpyDtoD: the destination buffer
  std::string name;     // cuMemAlloc: names the buffer; dma: names the transfer
  uint64_t size = 0, offset = 0;
  bool write = true;              // dma: seen from the DMA device
  int count = 1;                  // dma: repetitions
  double every_ns = 0;            // dma: one repetition starts every this often (0: back to back)
  bool wait = true;               // dma: wait for it (false: it runs while the program goes on)
  bool async = false;             // cuMemcpy*: the Async form (on the NULL stream)
  bool relaxed_ordering = false;  // dma: attributes of the device's requests
  bool id_based_ordering = false;
  double time_ns = 0;  // sleep
  std::string expect = "ok";
  config::source_loc loc;
};

struct program_spec {
  driver_spec driver;
  std::optional<peer_spec> peer;
  std::vector<std::string> processes;
  std::vector<step_spec> steps;
  bool empty() const { return steps.empty(); }
};

// Reads `driver`, `peer_driver`, `processes` and `program` from a scenario's root map.
program_spec read_program(const config::node_reader& root);

// Throws config::error when the program names devices the topology does not have (or of
// the wrong kind).
void check_program(const program_spec& p, const topo::topology& t);

// The keys read_program reads at the top level of a scenario.
inline constexpr const char* program_keys[] = {"driver", "peer_driver", "processes", "program"};

}  // namespace p2psim::core
