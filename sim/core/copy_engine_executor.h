// CUDA memory copies carried out by the GPUs' copy engines on the simulated fabric:
// host <-> device copies go through a staging buffer in the GPU's socket memory (as the CUDA
// driver stages pageable memory) and move as PCIe reads and writes of the copy engine;
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
#include "sim/core/system.h"

namespace p2psim::core {

class copy_engine_executor final : public cuda::copy_executor {
 public:
  // `gpus`: the GPU models by CUDA device ordinal.
  copy_engine_executor(fabric_system& sys, std::vector<gpu::gpu*> gpus);
  void copy(const cuda::copy_request& r) override;
  void synchronize(const cuda::sync_request& r) override;
  uint64_t copies() const { return m_copies; }
  uint64_t bytes() const { return m_bytes; }
  // When each copy was called, returned to its caller and completed (0: not yet), in the
  // order they were called.
  struct copy_times {
    uint64_t call_ps = 0, return_ps = 0, complete_ps = 0;
    std::string engine, host;  // the GPU whose engine ran it, and that GPU's socket
  };
  // Returns once every copy issued so far has completed.
  void drain();
  const std::vector<copy_times>& times() const { return m_times; }

 private:
  using stream_key = std::tuple<int, const void*, const void*>;  // pid, context, stream
  struct queue {
    uint64_t issued = 0, finished = 0;
    int gpu = 0;  // whose engine ran its latest copy (its sync_return applies)
  };
  void run(const cuda::copy_request& r, const std::vector<uint8_t>& staged);
  void engine_dma(int gpu, bool write, uint64_t host_offset, const cuda::copy_request& r,
                  bool host_is_src);
  root_complex::root_complex& socket_of(int gpu);
  static int engine_gpu(const cuda::copy_request& r);
  const queue* first_pending(const cuda::sync_request* scope) const;

  fabric_system& m_sys;
  std::vector<gpu::gpu*> m_gpus;
  std::map<stream_key, queue> m_queues;
  sc_core::sc_event m_progress;
  uint64_t m_copies = 0, m_bytes = 0;
  std::vector<copy_times> m_times;
};

}  // namespace p2psim::core
