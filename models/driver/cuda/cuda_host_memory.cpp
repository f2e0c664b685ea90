// Page-locked host memory: cuMemHostAlloc / cuMemAllocHost blocks, memory the application
// registers with cuMemHostRegister, and their pointer attributes, as libcuda 580 answers them
// (tests/data/cuda_probe/h200_cuda13.txt, "pinned host memory", and h200_cuda13_host.txt).
// Its pages are pinned in their frames by the simulated kernel (kernel::user_memory) for as
// long as the block lives, so the GPUs' copy engines reach it directly: a synchronous copy
// from it returns once the copy is complete (cuda_memcpy.cpp).
#include <algorithm>

#include "models/driver/cuda/cuda_state.h"

using namespace p2psim::cuda::detail;
namespace kernel = p2psim::kernel;

namespace {
uint64_t address(const void* p) {
  return uint64_t(reinterpret_cast<uintptr_t>(p));
}
}  // namespace

namespace p2psim::cuda::detail {

const pinned_block* pinned_range(const void* p, size_t bytes) {
  const auto pid = kernel::current_pid();
  for (const auto& b : global().pinned)
    if (b.pid == pid && b.holds(address(p), bytes)) return &b;
  return nullptr;
}

CUresult pinned_attribute(const pinned_block& b, CUpointer_attribute attr, void* data,
                          CUdeviceptr ptr) {
  const auto base = CUdeviceptr(b.start);
  CUctx_st* ctx = live_context(b.ctx);
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = ctx;
      break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned int*>(data) = CU_MEMORYTYPE_HOST;
      break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:  // one address for host and GPU (UVA)
      *static_cast<CUdeviceptr*>(data) = ptr;
      break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      *static_cast<void**>(data) = reinterpret_cast<void*>(uintptr_t(ptr));
      break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      *static_cast<unsigned long long*>(data) = b.buffer_id;
      break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = ctx ? ctx->device : 0;
      break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *static_cast<CUdeviceptr*>(data) = base;
      break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<size_t*>(data) = b.size;
      break;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      *static_cast<unsigned int*>(data) = 1;
      break;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
      *static_cast<unsigned long long*>(data) = 0;
      break;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:  // what the GPUs may do with it
      *static_cast<unsigned int*>(data) = b.registered && (b.flags & CU_MEMHOSTREGISTER_READ_ONLY)
                                              ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READ
                                              : CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
      break;
    // Not GPU memory: no tokens to pin it by (5.6), not for GPUDirect RDMA, not for IPC.
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
      return CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
      *static_cast<unsigned int*>(data) = 0;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

}  // namespace p2psim::cuda::detail

namespace {

constexpr unsigned alloc_flags =
    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
// IOMEMORY is for a device's MMIO range: on memory it is refused (driver 580).
constexpr unsigned register_flags =
    CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_READ_ONLY;

// What cuMemHostGetFlags reports: every block is mapped for the GPUs (unified addressing);
// PORTABLE is kept for registered memory only, READ_ONLY never (driver 580).
unsigned reported_flags(const pinned_block& b) {
  return CU_MEMHOSTALLOC_DEVICEMAP |
         (b.flags & (b.registered ? CU_MEMHOSTREGISTER_PORTABLE : CU_MEMHOSTALLOC_WRITECOMBINED));
}

// The calls that need a current context: none is INVALID_CONTEXT, a destroyed one still on
// the stack CONTEXT_IS_DESTROYED.
CUresult context_check() {
  CUctx_st* top = me().current();
  if (!top) return CUDA_ERROR_INVALID_CONTEXT;
  return live_context(top) ? CUDA_SUCCESS : CUDA_ERROR_CONTEXT_IS_DESTROYED;
}
// The calls that need none, but refuse a destroyed one current.
CUresult no_dead_context() {
  CUctx_st* top = me().current();
  return top && !live_context(top) ? CUDA_ERROR_CONTEXT_IS_DESTROYED : CUDA_SUCCESS;
}

// The calling process's block holding byte `p`, or the blocks' end.
std::vector<pinned_block>::iterator block_holding(const void* p) {
  auto& blocks = global().pinned;
  const auto pid = kernel::current_pid();
  return std::find_if(blocks.begin(), blocks.end(), [&](const pinned_block& b) {
    return b.pid == pid && b.holds(address(p), 1);
  });
}

// Gives a block's pages back to the kernel, once no copy of the process still uses them (as
// cudaFreeHost and cudaHostUnregister synchronize). False when it went meanwhile.
bool release(uint64_t start) {
  const auto pid = kernel::current_pid();
  for (auto& c : global().contexts)
    if (c->alive && c->pid == pid) synchronize_context(c.get());
  auto& blocks = global().pinned;
  auto it = std::find_if(blocks.begin(), blocks.end(),
                         [&](const pinned_block& b) { return b.pid == pid && b.start == start; });
  if (it == blocks.end()) return false;
  drop_block(*it);
  blocks.erase(it);
  return true;
}

constexpr uint64_t chunk_bytes = 2ull << 20, block_step = 512;

uint64_t round_up(uint64_t n, uint64_t to) {
  return (n + to - 1) / to * to;
}

// A place for `bytes` in one of the current context's chunks, or in a new one; 0 when the
// kernel has no memory left.
uint64_t place_block(uint64_t bytes) {
  auto& chunks = global().host_chunks;
  const auto pid = kernel::current_pid();
  const CUctx_st* ctx = current_context();
  const uint64_t need = round_up(bytes, block_step);
  if (need <= chunk_bytes)
    for (auto& c : chunks) {
      if (c.pid != pid || c.ctx != ctx || c.size != chunk_bytes) continue;
      uint64_t at = 0;
      for (const auto& [offset, length] : c.used) {
        if (offset - at >= need) break;
        at = offset + length;
      }
      if (c.size - at >= need) {
        c.used[at] = need;
        return c.start + at;
      }
    }
  auto& os = kernel::current_os();
  const uint64_t size = round_up(need, chunk_bytes);
  void* p = os.memory().allocate(pid, size, os.numa_node(pid));
  if (!p) return 0;
  std::vector<kernel::bus_run> runs;
  if (os.memory().pin(pid, p, size, runs) != 0) {
    os.memory().free(pid, p);
    return 0;
  }
  chunks.push_back({pid, ctx, address(p), size, runs.front().bus, {{0, need}}});
  return address(p);
}

void release_chunk(std::vector<host_chunk>::iterator it) {
  auto& memory = kernel::current_os().memory();
  const void* p = reinterpret_cast<const void*>(uintptr_t(it->start));
  memory.unpin(p, it->size);
  memory.free(it->pid, p);
  global().host_chunks.erase(it);
}

// The bus address of byte `start` of a cuMemHostAlloc block: its chunk's frames.
uint64_t chunk_bus(uint64_t start) {
  for (const auto& c : global().host_chunks)
    if (c.pid == kernel::current_pid() && start >= c.start && start - c.start < c.size)
      return c.bus + (start - c.start);
  return 0;
}

void add_block(uint64_t start, size_t size, unsigned flags, bool registered, uint64_t bus) {
  pinned_block b;
  b.pid = kernel::current_pid();
  b.start = start;
  b.size = size;
  b.flags = flags;
  b.registered = registered;
  b.ctx = current_context();
  b.buffer_id = installed_driver()->new_buffer_id();
  b.bus = bus;
  global().pinned.push_back(b);
}

}  // namespace

namespace p2psim::cuda::detail {

void drop_block(const pinned_block& b) {
  if (b.registered) {
    kernel::current_os().memory().unpin(reinterpret_cast<const void*>(uintptr_t(b.start)), b.size);
    return;
  }
  auto& chunks = global().host_chunks;
  for (auto it = chunks.begin(); it != chunks.end(); ++it)
    if (it->pid == b.pid && b.start >= it->start && b.start < it->start + it->size) {
      it->used.erase(b.start - it->start);
      if (it->used.empty()) release_chunk(it);
      return;
    }
}

// A context's end takes its page-locked blocks with it, and its registrations (the memory
// registered stays the application's, pageable again).
void drop_host_memory_of(const CUctx_st* ctx) {
  auto& blocks = global().pinned;
  for (auto it = blocks.begin(); it != blocks.end();)
    if (it->ctx == ctx) {
      drop_block(*it);
      it = blocks.erase(it);
    } else {
      ++it;
    }
  auto& chunks = global().host_chunks;  // those still holding a block a NULL context made
  for (auto it = chunks.begin(); it != chunks.end();)
    if (it->ctx == ctx)
      release_chunk(it);
    else
      ++it;
}

}  // namespace p2psim::cuda::detail

CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  if (CUresult r = check_init()) return r;
  if (CUresult r = context_check()) return r;
  if (!pp || (Flags & ~alloc_flags)) return CUDA_ERROR_INVALID_VALUE;
  if (bytesize == 0) {  // succeeds, with nothing to free
    *pp = nullptr;
    return CUDA_SUCCESS;
  }
  const uint64_t start = place_block(bytesize);
  if (!start) return CUDA_ERROR_OUT_OF_MEMORY;
  add_block(start, bytesize, Flags, false, chunk_bus(start));
  *pp = reinterpret_cast<void*>(uintptr_t(start));
  return CUDA_SUCCESS;
}

CUresult cuMemAllocHost(void** pp, size_t bytesize) {
  return cuMemHostAlloc(pp, bytesize, 0);
}

// Only a block's own start frees it, and only one cuMemHostAlloc made; NULL is a no-op.
CUresult cuMemFreeHost(void* p) {
  if (CUresult r = check_init()) return r;
  if (CUresult r = no_dead_context()) return r;
  if (!p) return CUDA_SUCCESS;
  auto it = block_holding(p);
  if (it == global().pinned.end() || it->registered || it->start != address(p))
    return CUDA_ERROR_INVALID_VALUE;
  return release(address(p)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// Any byte range of the process's memory, unaligned too; the kernel pins the pages holding
// it, but only its own bytes count as registered.
CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags) {
  if (CUresult r = check_init()) return r;
  if (CUresult r = context_check()) return r;
  if (!p || bytesize == 0 || (Flags & ~register_flags)) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t start = address(p);
  if (bytesize > UINT64_MAX - start) return CUDA_ERROR_INVALID_VALUE;
  for (const auto& b : global().pinned)
    if (b.pid == kernel::current_pid() && start < b.start + b.size && b.start < start + bytesize)
      return b.registered ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED : CUDA_ERROR_INVALID_VALUE;
  std::vector<kernel::bus_run> runs;
  if (kernel::current_os().memory().pin(kernel::current_pid(), p, bytesize, runs) != 0)
    return CUDA_ERROR_INVALID_VALUE;  // not memory of the process's
  add_block(start, bytesize, Flags, true, runs.front().bus);
  return CUDA_SUCCESS;
}

CUresult cuMemHostUnregister(void* p) {
  if (CUresult r = check_init()) return r;
  if (CUresult r = no_dead_context()) return r;
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  auto it = block_holding(p);
  if (it == global().pinned.end()) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  // Inside a range but not its start, or page-locked memory of cuMemHostAlloc's.
  if (!it->registered || it->start != address(p)) return CUDA_ERROR_INVALID_VALUE;
  return release(address(p)) ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

// With unified addressing the GPUs reach page-locked memory at its host address.
CUresult cuMemHostGetDevicePointer(CUdeviceptr* pdptr, void* p, unsigned int Flags) {
  if (CUresult r = check_init()) return r;
  if (CUresult r = context_check()) return r;
  if (!pdptr || Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (!pinned_range(p, 1)) return CUDA_ERROR_INVALID_VALUE;
  *pdptr = CUdeviceptr(address(p));
  return CUDA_SUCCESS;
}

CUresult cuMemHostGetFlags(unsigned int* pFlags, void* p) {
  if (CUresult r = check_init()) return r;
  if (CUresult r = context_check()) return r;
  if (!pFlags) return CUDA_ERROR_INVALID_VALUE;
  const pinned_block* b = pinned_range(p, 1);
  if (!b) return CUDA_ERROR_INVALID_VALUE;
  *pFlags = reported_flags(*b);
  return CUDA_SUCCESS;
}
