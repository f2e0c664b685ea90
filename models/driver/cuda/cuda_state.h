// The CUDA user-space state of the simulated processes, shared by the files implementing
// cuda.h. Private to the CUDA API model.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <vector>

#include "models/driver/cuda/copy_executor.h"
#include "models/driver/cuda/cuda.h"
#include "models/driver/nvidia/nvidia_driver.h"

// A context handle. Handles are never freed while their driver lives (a destroyed one stays
// as a tombstone), so a stale handle can never alias a newer context.
struct CUctx_st {
  p2psim::kernel::pid_t pid = 0;
  int id = 0;  // the driver's context id
  int device = 0;
  unsigned int flags = 0;
  bool alive = true;
  // The contexts whose memory this one may reach directly (cuCtxEnablePeerAccess): handles
  // stay valid as tombstones, so a destroyed peer is simply no longer live.
  std::set<const CUctx_st*> peers;
};

struct CUstream_st {
  CUctx_st* ctx = nullptr;
  bool alive = true;
};

namespace p2psim::cuda::detail {

// One thread per process, so one context stack per process. cuCtxCreate pushes,
// cuCtxSetCurrent replaces the top (NULL pops), cuCtxDestroy of the current context pops it:
// the context below becomes current again, as libcuda 580 does (tests/data/cuda_probe).
struct process_state {
  bool initialized = false;
  std::vector<CUctx_st*> stack;
  CUctx_st* current() const { return stack.empty() ? nullptr : stack.back(); }
};

// Page-locked host memory: a block from cuMemHostAlloc / cuMemAllocHost, or the
// application's own memory registered with cuMemHostRegister. Its pages stay pinned in their
// frames (kernel::user_memory) while it lives, so the copy engines reach it directly and a
// synchronous copy from it is complete on return.
struct pinned_block {
  kernel::pid_t pid = 0;
  uint64_t start = 0;  // the host pointer
  size_t size = 0;
  unsigned int flags = 0;   // CU_MEMHOSTALLOC_* or CU_MEMHOSTREGISTER_* as given
  bool registered = false;  // cuMemHostRegister: the memory is the application's
  CUctx_st* ctx = nullptr;  // current when it was made (none is needed)
  uint64_t buffer_id = 0;
  uint64_t bus = 0;  // where its pinned pages put its first byte on the bus
  bool holds(uint64_t p, uint64_t bytes) const {
    return p >= start && p - start < size && bytes <= size - (p - start);
  }
};

// Where libcuda carves page-locked blocks from: memory it gets from the kernel and pins
// whole, per context. Blocks up to 2 MiB are rounded to 512 bytes and placed first fit in the
// context's 2 MiB chunks; a bigger one gets a chunk of its own (what the probe saw of driver
// 580: small blocks packed at 512-byte steps, 64 KiB ones side by side, addresses reused).
// A chunk goes back to the kernel when its last block is freed, or with its context.
struct host_chunk {
  kernel::pid_t pid = 0;
  const CUctx_st* ctx = nullptr;
  uint64_t start = 0, size = 0;
  uint64_t bus = 0;                   // of its first byte (its frames are contiguous)
  std::map<uint64_t, uint64_t> used;  // offset -> bytes
};

// A VMM handle (cuMemCreate, cuMemRetainAllocationHandle): a reference to physical memory the
// driver keeps (`memory`; 0 for host memory, which is not modelled). It stays usable while a
// reference or a mapping made with it lives (driver 580 maps a released but mapped handle
// again), and its memory goes with the last of both.
struct vmm_handle {
  kernel::pid_t pid = 0;  // whose handle it is
  uint64_t memory = 0;
  CUmemAllocationProp prop{};
  int refs = 1;
  int mappings = 0;
  uint64_t block_id = 0;  // CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID of its mappings
};

// The CUDA user space of one simulated OS's processes (kernel::os owns it).
struct state {
  std::map<CUmemGenericAllocationHandle, vmm_handle> vmm_handles;  // usable ones
  CUmemGenericAllocationHandle next_vmm_handle = 0x10000;
  std::map<kernel::pid_t, process_state> processes;
  std::vector<pinned_block> pinned;  // live blocks
  std::vector<host_chunk> host_chunks;
  std::vector<std::unique_ptr<CUctx_st>> contexts;
  std::vector<std::unique_ptr<CUstream_st>> streams;
};

// The NVIDIA driver of the OS the caller runs in, or nullptr when none is bound.
nv::nvidia_driver* installed_driver();
// The CUDA state of the OS the caller runs in (one must be bound).
state& global();
// The calling process (kernel::current_pid()).
process_state& me();
// CUDA_SUCCESS once this process has called cuInit (and its driver is still installed).
CUresult check_init();
// The live context `c` of the calling process, or nullptr.
CUctx_st* live_context(CUcontext c);
// The current context if it is still alive, or nullptr.
CUctx_st* current_context();
// The live context of the calling process with the driver id `id`, or nullptr.
CUctx_st* context_of(int id);
// Waits for the executor's work in `ctx` (the synchronizing side of several calls).
void synchronize_context(CUctx_st* ctx);
// The calling process's live pinned block holding [p, p + bytes), or nullptr.
const pinned_block* pinned_range(const void* p, size_t bytes);
// Pointer attribute `attr` of pinned host memory `b`, which holds `ptr` (as libcuda 580
// answers: tests/data/cuda_probe).
CUresult pinned_attribute(const pinned_block& b, CUpointer_attribute attr, void* data,
                          CUdeviceptr ptr);
// Unpins a page-locked block, and frees it unless it was registered (the caller drops it from
// the list).
void drop_block(const pinned_block& b);
// cuCtxDestroy: the context's blocks are freed and its registrations dropped.
void drop_host_memory_of(const CUctx_st* ctx);
// The usable VMM handle `h`, or nullptr.
vmm_handle* vmm_handle_of(CUmemGenericAllocationHandle h);
// The caller's VMM mapping holding `va`, or nullptr.
p2psim::nv::nvidia_driver::vmm_mapping* vmm_mapping_at(CUdeviceptr va);
// Pointer attribute `attr` of the VMM mapping `m`, which holds `ptr`.
CUresult vmm_attribute(const p2psim::nv::nvidia_driver::vmm_mapping& m, CUpointer_attribute attr,
                       void* data, CUdeviceptr ptr);
// Whether context `c`'s GPU may read (`write`: and write) all of [va, va + bytes) through
// the caller's VMM mappings, which lie back to back there.
bool vmm_accessible(const CUctx_st* c, CUdeviceptr va, size_t bytes, bool write);
// What kernels on GPU `ordinal` see of RDMA writes, or nullptr when that is not modelled.
gpu::rdma_visibility* visibility_of(int ordinal);
// A CPU-initiated work submission or synchronization on GPU `ordinal`: every RDMA write landed
// on it so far becomes visible to its kernels and its peers' (guide 5.7).
void rdma_sync(int ordinal);

}  // namespace p2psim::cuda::detail
