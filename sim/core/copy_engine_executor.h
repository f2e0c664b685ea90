// CUDA memory copies carried out by the GPUs' copy engines on the simulated fabric:
// host <-> device copies move as PCIe reads and writes of the copy engine, straight from or
// into page-locked host memory, where its frames are (on another socket, over the
// interconnect), and through a staging buffer in the GPU's socket memory for pageable memory
// (as the CUDA driver stages it);
// device-to-device copies within a GPU move at VRAM bandwidth. Copies on one stream run in
// order; asynchronous ones run while the caller goes on. Each copy also pays the CUDA-side
// costs its GPU's parameters give (docs/architecture.md, "CUDA copy costs"): the driver's
// submission in the calling thread, the engine's launch before the first request, its
// completion after the last byte, and the wake-up of a caller that blocked on it. Must be
// called from SC_THREADs.
#pragma once

#include <map>
#include <string>
#include <systemc>
#include <tuple>
#include <vector>

#include "models/driver/cuda/copy_executor.h"
#include "models/driver/kernel/user_memory.h"
#include "sim/core/host_frames.h"
#include "sim/core/system.h"

namespace p2psim::core {

class copy_engine_executor final : public cuda::copy_executor {
 public:
  // `gpus`: the GPU models by CUDA device ordinal; `memory`: the processes' memory (the
  // CPU's view of host buffers, and the frames of page-locked ones), over `frames`.
  copy_engine_executor(fabric_system& sys, std::vector<gpu::gpu*> gpus, kernel::user_memory& memory,
                       host_frames& frames);
  void copy(const cuda::copy_request& r) override;
  void synchronize(const cuda::sync_request& r) override;
  uint64_t copies() const { return m_copies; }
  uint64_t bytes() const { return m_bytes; }
  // What copies lost on the fabric, one line each (the run reports them as errors).
  const std::vector<std::string>& faults() const { return m_faults; }
  // When each copy was called, returned to its caller and completed (0: not yet), in the
  // order they were called.
  struct copy_times {
    uint64_t call_ps = 0, return_ps = 0, complete_ps = 0;
    std::string engine, host;  // the GPU whose engine ran it, and that GPU's socket
  };
  // Returns once every copy issued so far has completed (and lands what is deferred).
  void drain();
  // Work on `scope`'s streams goes on (a kernel launch): copies queued on them before it are
  // complete for it (CUDA:stream-order), the bytes a litmus choice deferred included.
  void stream_goes_on(const cuda::sync_request& scope);
  const std::vector<copy_times>& times() const { return m_times; }

 private:
  using stream_key = std::tuple<int, const void*, const void*>;  // pid, context, stream
  struct queue {
    uint64_t issued = 0, finished = 0;
    int gpu = 0;  // whose engine ran its latest copy (its sync_return applies)
  };
  // One copy engine: it runs one copy at a time, whichever stream it is on, in the order
  // they came to it (tools/hw_probe/streams_probe.cu).
  struct engine_lane {
    uint64_t tickets = 0, serving = 0;  // copies that came to it, and the one it runs
    bool served_any = false;
    stream_key last_stream{};  // of the copy it ran last
    uint64_t free_ps = 0;      // when that copy completed
  };
  static int lane_of(cuda::copy_kind kind, int engines);
  engine_lane* take_lane(int gpu, cuda::copy_kind kind, const stream_key& stream,
                         const gpu::gpu_params& engine);
  std::map<std::pair<int, int>, engine_lane> m_lanes;  // by GPU and engine
  // Where a copy stages its bytes in a socket's memory while it runs (as the driver stages
  // pageable memory): taken ranges by offset, with their lengths, per socket.
  class staging_range {
   public:
    staging_range(std::map<uint64_t, uint64_t>& taken, uint64_t capacity, sc_core::sc_event& freed);
    ~staging_range();
    staging_range(const staging_range&) = delete;
    staging_range& operator=(const staging_range&) = delete;
    uint64_t offset = 0;

   private:
    std::map<uint64_t, uint64_t>& m_taken;
    sc_core::sc_event& m_freed;
  };
  sc_core::sc_event m_staging_freed;  // a staging buffer was given back
  // `returned_early`: the call returned before the copy completed (guide 5.7).
  void run(const cuda::copy_request& r, const std::vector<uint8_t>& staged, bool returned_early);
  // Whether the call returns once the copy is complete: the CUDA model's answer, less
  // SYNC_MEMOPS's part when a litmus mutation turned CUDA:SYNC_MEMOPS off.
  bool complete_on_return(const cuda::copy_request& r) const;
  // A copy within one GPU that returned early, explored (a litmus run): how much of it has
  // landed when its engine is done is a choice (none of it, a part from its start, all), the
  // rest lands when its stream goes on or is synchronized. Without a choice source all of it
  // lands then.
  void land_within(gpu::gpu& dst, const cuda::copy_request& r,
                   const std::vector<std::vector<uint8_t>>& bytes, bool returned_early);
  struct deferred_bytes {
    stream_key stream;
    gpu::gpu* gpu = nullptr;
    uint64_t offset = 0;  // in its VRAM
    std::vector<uint8_t> bytes;
  };
  std::vector<deferred_bytes> m_deferred;
  // Lands the deferred bytes of the streams in `scope` (every stream when null).
  void land_deferred(const cuda::sync_request* scope);
  // Between two GPUs with peer access: the source GPU's engine writes into the destination's
  // VRAM through its BAR1, a window of the BAR1 space the driver keeps (bar1_reserved) mapped
  // at a time.
  void peer_copy(const cuda::copy_request& r);
  void note_undelivered(const cuda::copy_request& r, uint64_t bytes);
  uint64_t run_job(int gpu, dma::dma_job job);
  std::vector<std::string> m_faults;
  std::map<int, std::vector<bool>> m_peer_windows;  // by destination GPU: which are taken
  sc_core::sc_event m_peer_window_freed;
  // A copy-engine job between VRAM and host memory at bus address `host_bus`.
  void engine_dma(int gpu, bool write, uint64_t host_bus, const cuda::copy_request& r,
                  bool host_is_src);
  // A copy from or into page-locked memory: the engine reaches its frames directly.
  void pinned_copy(const cuda::copy_request& r);
  root_complex::root_complex& socket_of(int gpu);
  static int engine_gpu(const cuda::copy_request& r);
  const queue* first_pending(const cuda::sync_request* scope) const;

  fabric_system& m_sys;
  std::vector<gpu::gpu*> m_gpus;
  kernel::user_memory& m_memory;
  host_frames& m_frames;
  std::map<stream_key, queue> m_queues;
  sc_core::sc_event m_progress;
  uint64_t m_copies = 0, m_bytes = 0;
  std::vector<copy_times> m_times;
};

}  // namespace p2psim::core
