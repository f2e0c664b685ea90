// CUDA memory copies carried out by the GPUs' copy engines on the simulated fabric:
// host <-> device copies go through a staging buffer in the GPU's socket memory (as the CUDA
// driver stages pageable memory) and move as PCIe reads and writes of the copy engine;
// device-to-device copies within a GPU move at VRAM bandwidth. Copies on one stream run in
// order; asynchronous ones run while the caller goes on. Must be called from SC_THREADs.
#pragma once

#include <map>
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

 private:
  using stream_key = std::tuple<int, const void*, const void*>;  // pid, context, stream
  struct queue {
    uint64_t issued = 0, finished = 0;
  };
  void run(const cuda::copy_request& r, const std::vector<uint8_t>& staged);
  void engine_dma(int gpu, bool write, uint64_t host_offset, const cuda::copy_request& r,
                  bool host_is_src);
  root_complex::root_complex& socket_of(int gpu);

  fabric_system& m_sys;
  std::vector<gpu::gpu*> m_gpus;
  std::map<stream_key, queue> m_queues;
  sc_core::sc_event m_progress;
  uint64_t m_copies = 0, m_bytes = 0;
};

}  // namespace p2psim::core
