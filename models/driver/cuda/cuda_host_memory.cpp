// Page-locked host memory (cuMemAllocHost, cuMemFreeHost) and its pointer attributes, as
// libcuda 580 answers them (tests/data/cuda_probe/h200_cuda13.txt, "pinned host memory").
// The copy path treats it as the GPU's copy engine reaching the buffer itself: a synchronous
// copy from it returns once the copy is complete (cuda_memcpy.cpp).
#include <algorithm>

#include "models/driver/cuda/cuda_state.h"

using namespace p2psim::cuda::detail;

namespace p2psim::cuda::detail {

const pinned_block* pinned_range(const void* p, size_t bytes) {
  const auto pid = kernel::current_pid();
  const auto* at = static_cast<const uint8_t*>(p);
  for (const auto& b : global().pinned)
    if (b.pid == pid && at >= b.bytes.get() && at < b.bytes.get() + b.size &&
        bytes <= size_t(b.bytes.get() + b.size - at))
      return &b;
  return nullptr;
}

CUresult pinned_attribute(const pinned_block& b, CUpointer_attribute attr, void* data,
                          CUdeviceptr ptr) {
  const auto base = CUdeviceptr(reinterpret_cast<uintptr_t>(b.bytes.get()));
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

CUresult cuMemAllocHost(void** pp, size_t bytesize) {
  if (CUresult r = check_init()) return r;
  if (!pp) return CUDA_ERROR_INVALID_VALUE;
  if (bytesize == 0) {  // succeeds, with nothing to free
    *pp = nullptr;
    return CUDA_SUCCESS;
  }
  pinned_block b;
  b.pid = p2psim::kernel::current_pid();
  b.bytes = std::make_unique<uint8_t[]>(bytesize);
  b.size = bytesize;
  b.ctx = current_context();
  b.buffer_id = installed_driver()->new_buffer_id();
  *pp = b.bytes.get();
  global().pinned.push_back(std::move(b));
  return CUDA_SUCCESS;
}

// Only a block's own start frees it; NULL is a no-op.
CUresult cuMemFreeHost(void* p) {
  if (CUresult r = check_init()) return r;
  if (!p) return CUDA_SUCCESS;
  auto& blocks = global().pinned;
  const auto pid = p2psim::kernel::current_pid();
  auto it = std::find_if(blocks.begin(), blocks.end(),
                         [&](const pinned_block& b) { return b.pid == pid && b.bytes.get() == p; });
  if (it == blocks.end()) return CUDA_ERROR_INVALID_VALUE;
  // Synchronizing, as cudaFreeHost is: no copy still under way writes into freed memory.
  for (auto& c : global().contexts)
    if (c->alive && c->pid == pid) synchronize_context(c.get());
  it = std::find_if(blocks.begin(), blocks.end(),
                    [&](const pinned_block& b) { return b.pid == pid && b.bytes.get() == p; });
  if (it == blocks.end()) return CUDA_ERROR_INVALID_VALUE;  // freed meanwhile
  blocks.erase(it);
  return CUDA_SUCCESS;
}
