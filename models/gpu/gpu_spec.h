// What a topology file sets for a GPU (docs/formats-topology.md, "devices[]", `type: gpu`).
#pragma once

#include <cstdint>
#include <optional>

#include "models/params/param.h"

namespace p2psim::gpu {

// CUGPUDirectRDMAWritesOrdering's values; as a flush scope, CUflushGPUDirectRDMAWritesScope's.
enum class writes_ordering { none = 0, owner = 100, all_devices = 200 };

struct gpu_spec {
  uint64_t bar1_bytes = 256ull << 20;
  uint64_t bar1_reserved_bytes = 32ull << 20;  // driver-internal (guide 5.5: 32 MB on Kepler)
  std::optional<uint64_t> bar1_address;        // unset: allocated by enumeration
  uint64_t vram_bytes = 16ull << 30;
  double vram_latency_ns = 300;  // BAR1 read: request in to first completion out
  double vram_bandwidth_gbs = 900;
  // CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING: kernels that see BAR1 writes in order.
  writes_ordering rdma_ordering = writes_ordering::owner;
  // What a cuMemcpy costs besides its TLPs (docs/architecture.md, "CUDA copy costs"). None
  // by default: a GPU's device preset sets what was measured on it.
  double copy_submit_ns = 0;
  double copy_launch_ns = 0;
  double copy_completion_ns = 0;
  double copy_sync_return_ns = 0;
  // Copy engines (CUDA's asyncEngineCount; 0: not modelled, every copy runs at once) and
  // what an engine takes to turn from one stream's copy to another's.
  uint32_t copy_engines = 0;
  double copy_switch_ns = 0;
  // A copy within this GPU's memory (docs/architecture.md, "CUDA copy costs"): what it takes
  // before its first byte moves, and its rate (0: half of vram_bandwidth, each byte read and
  // written once).
  double copy_within_start_ns = 0;
  double vram_copy_bandwidth_gbs = 0;
  double vram_copy_gbs() const {
    return vram_copy_bandwidth_gbs > 0 ? vram_copy_bandwidth_gbs : vram_bandwidth_gbs / 2;
  }
};

inline const params::table<gpu_spec>& gpu_spec_params() {
  static const params::table<gpu_spec> t{
      params::size("bar1", &gpu_spec::bar1_bytes,
                   "BAR1 aperture (peer-visible GPU memory). Power of two, at least 4KiB."),
      params::size("bar1_reserved", &gpu_spec::bar1_reserved_bytes,
                   "BAR1 space the driver keeps for itself (GPUDirect RDMA guide 5.5); must be "
                   "smaller than `bar1`."),
      params::address("bar1_address", &gpu_spec::bar1_address,
                      "Explicit BAR1 base; aligned to `bar1`.")
          .default_text("allocated"),
      params::size("vram", &gpu_spec::vram_bytes, "Device memory."),
      params::time("vram_latency", &gpu_spec::vram_latency_ns,
                   "BAR1 read: request in to first completion out."),
      params::bandwidth("vram_bandwidth", &gpu_spec::vram_bandwidth_gbs, "VRAM data path."),
      params::choice("rdma_writes_ordering", &gpu_spec::rdma_ordering,
                     {{"none", writes_ordering::none},
                      {"owner", writes_ordering::owner},
                      {"all_devices", writes_ordering::all_devices}},
                     "CUDA's `CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING`: which kernels "
                     "see GPUDirect RDMA writes to this GPU in order without "
                     "`cuFlushGPUDirectRDMAWrites` or a CPU-side CUDA call (guide 5.7): nobody, "
                     "kernels on this GPU, or every GPU's. The others may see stale, partial or "
                     "reordered data until then."),
      params::time("copy_submit", &gpu_spec::copy_submit_ns,
                   "CPU time of a cuMemcpy call in the driver before the GPU is told (its "
                   "commands written, the doorbell rung); an asynchronous copy returns then."),
      params::time("copy_launch", &gpu_spec::copy_launch_ns,
                   "From the doorbell to the copy engine's first request. A copy queued behind "
                   "another on its stream is launched while that one runs."),
      params::time("copy_completion", &gpu_spec::copy_completion_ns,
                   "From a copy's last byte landed to its completion being visible (what the "
                   "next copy on the stream, an event or the host waits for)."),
      params::time("copy_sync_return", &gpu_spec::copy_sync_return_ns,
                   "From a copy's completion to the return of a call blocked on it (a "
                   "synchronous cuMemcpy, cuStreamSynchronize, cuCtxSynchronize)."),
      params::integer("copy_engines", &gpu_spec::copy_engines,
                      "Copy engines (CUDA's asyncEngineCount). Each runs one copy at a time, "
                      "whichever stream it is on, in the order copies reach it: with 1 every "
                      "copy takes it; with 2 host-to-device copies take one and the others the "
                      "second; with 3 or more copies within device memory take a third. 0: not "
                      "modelled, every copy runs at once.")
          .between(0, 64),
      params::time("copy_switch", &gpu_spec::copy_switch_ns,
                   "From an engine's completion of one stream's copy to the first request of a "
                   "copy another stream queued for it (a copy behind one of its own stream "
                   "starts at that one's completion)."),
      params::time("copy_within_start", &gpu_spec::copy_within_start_ns,
                   "What a copy within this GPU's memory (cuMemcpyDtoD on one device) takes "
                   "from its launch, or the completion of the copy ahead of it on its stream, "
                   "to its first byte moved, beyond what a host copy takes."),
      params::bandwidth("vram_copy_bandwidth", &gpu_spec::vram_copy_bandwidth_gbs,
                        "Rate of a copy within this GPU's memory: bytes copied per second, each "
                        "read and written once.")
          .default_text("half of `vram_bandwidth`"),
  };
  return t;
}

}  // namespace p2psim::gpu
