// Pointer attributes (GPUDirect RDMA 13.3, 5.6 tokens, 5.7 SYNC_MEMOPS, 6.5 buffer ID tag
// check, 7.2 Userspace API). A pointer is valid when it lies in a live cuMemAlloc allocation
// of the calling process, or in its pinned host memory (cuda_host_memory.cpp); anything else
// (a freed pointer, pageable memory, another process's allocation) is unknown to CUDA:
// CUDA_ERROR_INVALID_VALUE, which 6.5's tag check relies on.
#include "models/driver/cuda/cuda_state.h"

using namespace p2psim::cuda::detail;
using p2psim::nv::nvidia_driver;

namespace {

nvidia_driver& drv() {
  return *installed_driver();
}

nvidia_driver::allocation* allocation_at(CUdeviceptr ptr) {
  return drv().find_allocation(p2psim::kernel::current_pid(), ptr);
}

// Querying tokens and setting SYNC_MEMOPS "have CUDA synchronizing behavior" (7.2): pending
// copies on the allocation's context complete first.
void synchronize_owner(const nvidia_driver::allocation& a) {
  if (CUctx_st* c = context_of(a.ctx)) synchronize_context(c);
}

// Attribute `attr` of the live allocation `a`, which contains `ptr`.
CUresult read_attribute(nvidia_driver::allocation& a, CUpointer_attribute attr, void* data,
                        CUdeviceptr ptr) {
  const auto* ctx = drv().find_context(a.ctx);
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = context_of(a.ctx);
      break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned int*>(data) = CU_MEMORYTYPE_DEVICE;
      break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      // "the device pointer ... in the current CUcontext": needs one. Equal to ptr under UVA.
      if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
      *static_cast<CUdeviceptr*>(data) = ptr;
      break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      return CUDA_ERROR_INVALID_VALUE;  // GPU pages are never mapped for the host (7.1)
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS: {
      // The context's tokens (5.6). On the legacy path, retrieving them is what registers the
      // allocation for CUDA API consistency: it turns SYNC_MEMOPS on (5.7).
      auto* t = static_cast<CUDA_POINTER_ATTRIBUTE_P2P_TOKENS*>(data);
      t->p2pToken = ctx->p2p_token;
      t->vaSpaceToken = ctx->va_space_token;
      synchronize_owner(a);
      a.sync_memops = true;
      break;
    }
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
      *static_cast<unsigned int*>(data) = a.sync_memops;
      break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      *static_cast<unsigned long long*>(data) = a.buffer_id;  // never reused (6.5)
      break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *static_cast<unsigned int*>(data) = 0;
      break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = ctx->gpu;
      break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *static_cast<CUdeviceptr*>(data) = a.va;
      break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<size_t*>(data) = a.size;
      break;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      *static_cast<unsigned int*>(data) = 1;
      break;
    // cuMemAlloc memory can be shared with cuIpcGetMemHandle; memory opened from another
    // process cannot be shared on (libcuda 580). Neither has VMM handle types to export.
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
      *static_cast<unsigned int*>(data) = a.ipc_export == 0;
      break;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
      *static_cast<unsigned long long*>(data) = 0;
      break;
    // cuMemAlloc memory can be pinned (7.1); another process's, opened by IPC, cannot
    // (libcuda 580 says 0, and nv-p2p refuses it).
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
      *static_cast<unsigned int*>(data) = a.ipc_export == 0;
      break;
    // What driver 580 answers for cuMemAlloc memory as VMM sees it: one mapping of the whole
    // allocation, read and write, its own block.
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
      *static_cast<unsigned int*>(data) = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
      break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      *static_cast<void**>(data) = nullptr;
      break;
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
      *static_cast<size_t*>(data) = a.size;
      break;
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
      *static_cast<CUdeviceptr*>(data) = a.va;
      break;
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
      *static_cast<unsigned long long*>(data) = a.buffer_id;
      break;
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
      *static_cast<unsigned int*>(data) = 0;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;  // an attribute the driver does not know
  }
  return CUDA_SUCCESS;
}

// The attributes cuPointerGetAttributes takes: the driver API reference's list, minus what is
// not modelled. P2P_TOKENS is not in that list.
bool multi_supported(CUpointer_attribute attr) {
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPED:
      return true;
    default:
      return false;
  }
}

// What cuPointerGetAttributes gives for what a pointer does not have, as libcuda 580 does
// (tests/data/cuda_probe): the "default NULL value", except that memory CUDA does not know is
// its own host pointer, and its range is left unwritten.
void write_default(CUpointer_attribute attr, void* data, bool known, CUdeviceptr ptr) {
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = nullptr;
      break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      *static_cast<void**>(data) = known ? nullptr : reinterpret_cast<void*>(uintptr_t(ptr));
      break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      *static_cast<CUdeviceptr*>(data) = 0;
      break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      *static_cast<unsigned long long*>(data) = 0;
      break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      break;  // only device memory has a range
    // 0 is a real ordinal: say "no device" as cudaPointerGetAttributes does.
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = CU_DEVICE_INVALID;
      break;
    default:
      *static_cast<unsigned int*>(data) = 0;
      break;  // the unsigned int booleans, type
  }
}

}  // namespace

CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  if (CUresult r = check_init()) return r;
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  auto* a = allocation_at(ptr);
  if (a) return read_attribute(*a, attribute, data, ptr);
  if (const auto* m = vmm_mapping_at(ptr)) return vmm_attribute(*m, attribute, data, ptr);
  if (const auto* b = pinned_range(reinterpret_cast<const void*>(uintptr_t(ptr)), 1))
    return pinned_attribute(*b, attribute, data, ptr);
  return CUDA_ERROR_INVALID_VALUE;  // freed, pageable or foreign memory (6.5, 7.2)
}

// Unlike cuPointerGetAttribute, an invalid pointer is not an error here: every attribute
// gets its default and the call succeeds (driver API reference), which is how
// cudaPointerGetAttributes classifies host memory. An unsupported attribute is an error.
CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute* attributes,
                                void** data, CUdeviceptr ptr) {
  if (CUresult r = check_init()) return r;
  if (numAttributes && (!attributes || !data)) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned int i = 0; i < numAttributes; ++i)  // check all before writing any
    if (!data[i] || !multi_supported(attributes[i])) return CUDA_ERROR_INVALID_VALUE;
  auto* a = allocation_at(ptr);
  const auto* m = a ? nullptr : vmm_mapping_at(ptr);
  const auto* pinned =
      a || m ? nullptr : pinned_range(reinterpret_cast<const void*>(uintptr_t(ptr)), 1);
  for (unsigned int i = 0; i < numAttributes; ++i) {
    CUresult r = a        ? read_attribute(*a, attributes[i], data[i], ptr)
                 : m      ? vmm_attribute(*m, attributes[i], data[i], ptr)
                 : pinned ? pinned_attribute(*pinned, attributes[i], data[i], ptr)
                          : CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS)  // HOST_POINTER of VRAM: NULL
      write_default(attributes[i], data[i], a || m || pinned, ptr);
  }
  return CUDA_SUCCESS;
}

CUresult cuPointerSetAttribute(const void* value, CUpointer_attribute attribute, CUdeviceptr ptr) {
  if (CUresult r = check_init()) return r;
  if (!value || attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS) return CUDA_ERROR_INVALID_VALUE;
  auto* a = allocation_at(ptr);
  if (!a) return CUDA_ERROR_INVALID_VALUE;  // "anything else if pointer points to CPU memory"
  // The whole allocation, whichever byte of it `ptr` names (7.2); pending synchronous copies
  // complete before this returns.
  synchronize_owner(*a);
  a->sync_memops = *static_cast<const unsigned int*>(value) != 0;
  return CUDA_SUCCESS;
}
