// Who carries out the CUDA API's memory copies. The CUDA model validates a copy and resolves
// its device side through the driver's VA -> VRAM page mapping; an executor moves the bytes.
// The default one copies instantly and functionally on the GPUs' VRAM backing stores; a
// simulation installs a timed one (copy engines on the PCIe fabric) in its place.
#pragma once

#include <cstdint>
#include <vector>

#include "models/driver/cuda/cuda.h"
#include "models/driver/kernel/kernel.h"

namespace p2psim::cuda {

enum class copy_kind { host_to_device, device_to_host, device_to_device };

// A piece of a copy that is contiguous on both sides. Device allocations are backed by 64 KiB
// VRAM pages that need not be adjacent, so a copy is cut wherever either side crosses one.
struct copy_segment {
  uint64_t src = 0;  // VRAM offset on src_gpu, or byte offset into host_src
  uint64_t dst = 0;  // VRAM offset on dst_gpu, or byte offset into host_dst
  uint64_t bytes = 0;
};

struct copy_request {
  copy_kind kind = copy_kind::host_to_device;
  kernel::pid_t pid = 0;
  CUcontext ctx = nullptr;  // current when the copy was issued
  int src_gpu = -1;         // -1: the source is host memory
  int dst_gpu = -1;         // -1: the destination is host memory
  // Host buffers are the application's. Pageable ones are valid only during copy(): an
  // executor that defers the copy must take the source bytes now, and a copy into pageable
  // memory is complete on return (see below). A pinned one (cuMemAllocHost) stays valid until
  // the copy completes: cuMemFreeHost waits for the process's copies first.
  const void* host_src = nullptr;
  void* host_dst = nullptr;
  CUdeviceptr src_va = 0, dst_va = 0;  // the device pointers as the application gave them
  uint64_t bytes = 0;
  std::vector<copy_segment> segments;  // in address order; their bytes add up to `bytes`
  bool async = false;
  CUstream stream = nullptr;  // nullptr: the NULL stream of `ctx`
  // SYNC_MEMOPS of the device allocations involved, and CU_CTX_SYNC_MEMOPS of the context.
  bool src_sync_memops = false, dst_sync_memops = false, ctx_sync_memops = false;
  // Whether the copy must be complete, i.e. visible through BAR1 mappings, when the API call
  // returns (guide 5.7). The CUDA model sets it: for a copy into pageable host memory, and
  // a synchronous one into pinned memory; for a synchronous copy out of pinned memory; for
  // any other synchronous copy only when SYNC_MEMOPS is set on a device side or the context,
  // since cuMemcpyDtoD and HtoD from pageable memory otherwise return once the copy is queued
  // or staged. Async copies are never upgraded: SYNC_MEMOPS is about synchronous memory
  // operations only.
  bool complete_on_return = false;
  bool host_pinned = false;  // the host side is page-locked memory (cuMemHostAlloc, registered)
  // Then the bus address of its first byte: the pages the driver pinned when the memory was
  // allocated or registered, which a copy engine reaches even after the application freed the
  // range it had registered.
  uint64_t host_bus = 0;
  // Between two GPUs: the context the copy runs in has peer access to a context on the other
  // GPU (cuCtxEnablePeerAccess), so the copy goes over the fabric, GPU to GPU; otherwise the
  // driver stages it through host memory.
  bool peer = false;
};

// What a synchronizing call waits for: one stream, or all work of a context.
struct sync_request {
  kernel::pid_t pid = 0;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;  // with whole_context false: nullptr is the NULL stream
  bool whole_context = false;
};

class copy_executor {
 public:
  virtual ~copy_executor() = default;
  virtual void copy(const copy_request& r) = 0;
  // Returns once every copy covered by `r` has completed. Called by cuStreamSynchronize,
  // cuCtxSynchronize, and by the calls documented to synchronize: cuMemFree, cuCtxDestroy,
  // and setting SYNC_MEMOPS or reading P2P_TOKENS (guide 7.2: "CUDA synchronizing behavior").
  virtual void synchronize(const sync_request& r) { (void)r; }
};

// Copies at once on the VRAM backing stores of the driver's GPUs. What an OS's CUDA copies
// use unless another executor is set (kernel::os::set_copy_executor).
class instant_copy_executor final : public copy_executor {
 public:
  explicit instant_copy_executor(nv::nvidia_driver& d) : m_driver(d) {}
  void copy(const copy_request& r) override;

 private:
  nv::nvidia_driver& m_driver;
};

}  // namespace p2psim::cuda
