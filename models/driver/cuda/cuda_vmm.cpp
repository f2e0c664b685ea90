// CUDA's virtual memory management API (docs/driver-model.md, "VMM"): cuMemCreate makes
// physical memory, cuMemAddressReserve reserves VA, cuMemMap puts the one at the other and
// cuMemSetAccess lets GPUs use it. None of it belongs to a context: it works without one and
// outlives cuCtxDestroy. Each check and its result is driver 580's on an H200
// (tests/data/cuda_probe/h200_cuda13_vmm.txt).
#include "models/driver/cuda/cuda_state.h"
#include "models/driver/kernel/dma_buf.h"

using namespace p2psim::cuda::detail;
using p2psim::nv::nvidia_driver;

namespace {

constexpr size_t granularity = 2ull << 20;  // the big page: every size and VA is a multiple

nvidia_driver& drv() {
  return *installed_driver();
}

p2psim::kernel::pid_t pid() {
  return p2psim::kernel::current_pid();
}

bool power_of_two(uint64_t v) {
  return v && !(v & (v - 1));
}

// A handle that no reference and no mapping holds any more goes, and with the last handle on
// it, the driver's memory.
void drop_if_unused(CUmemGenericAllocationHandle h) {
  auto it = global().vmm_handles.find(h);
  if (it == global().vmm_handles.end() || it->second.refs > 0 || it->second.mappings > 0) return;
  if (it->second.memory) drv().vmm_drop_handle(it->second.memory, it->second.pid);
  global().vmm_handles.erase(it);
}

// Copies and kernels still using memory about to be unmapped finish first.
void synchronize_process() {
  for (auto& c : global().contexts)
    if (c->alive && c->pid == pid()) synchronize_context(c.get());
}

int device_of(const nvidia_driver::vmm_mapping& m) {
  auto where = drv().vmm_memory_of(m.memory);
  return where ? where->first : 0;
}

}  // namespace

namespace p2psim::cuda::detail {

vmm_handle* vmm_handle_of(CUmemGenericAllocationHandle h) {
  auto it = global().vmm_handles.find(h);
  return it == global().vmm_handles.end() ? nullptr : &it->second;
}

nvidia_driver::vmm_mapping* vmm_mapping_at(CUdeviceptr va) {
  return drv().vmm_mapping_at(pid(), va);
}

bool vmm_accessible(const CUctx_st* c, CUdeviceptr va, size_t bytes, bool write) {
  const auto over = drv().vmm_mappings_over(pid(), va, bytes);
  if (over.empty()) return false;
  const unsigned need = write ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_READ;
  for (const auto* m : over) {
    auto it = m->access.find(c->device);
    if (it == m->access.end() || (it->second & need) != need) return false;
  }
  return true;
}

CUresult vmm_attribute(const nvidia_driver::vmm_mapping& m, CUpointer_attribute attr, void* data,
                       CUdeviceptr ptr) {
  const vmm_handle* h = vmm_handle_of(m.handle);  // a mapping keeps its handle
  const CUctx_st* cur = current_context();
  const int device = cur ? cur->device : device_of(m);
  auto range = drv().vmm_reservation_of(pid(), ptr);
  if (!range) range = std::make_pair(m.va, m.size);  // mapped past its reservation's end
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = nullptr;  // no context owns VMM memory
      break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned int*>(data) = CU_MEMORYTYPE_DEVICE;
      break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      *static_cast<CUdeviceptr*>(data) = ptr;
      break;
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS: {  // the current context's VA space
      if (!cur) return CUDA_ERROR_INVALID_CONTEXT;
      const auto* ctx = drv().find_context(cur->id);
      auto* t = static_cast<CUDA_POINTER_ATTRIBUTE_P2P_TOKENS*>(data);
      t->p2pToken = ctx->p2p_token;
      t->vaSpaceToken = ctx->va_space_token;
      break;
    }
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:  // always on for VMM memory (driver 580)
    case CU_POINTER_ATTRIBUTE_MAPPED:
      *static_cast<unsigned int*>(data) = 1;
      break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      *static_cast<unsigned long long*>(data) = m.buffer_id;  // a new one every cuMemMap
      break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
      *static_cast<unsigned int*>(data) = 0;
      break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = device_of(m);
      break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:  // the reservation, not the mapping
      *static_cast<CUdeviceptr*>(data) = range->first;
      break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<size_t*>(data) = range->second;
      break;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
      *static_cast<unsigned long long*>(data) = h->prop.requestedHandleTypes;
      break;
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
      *static_cast<unsigned int*>(data) = h->prop.allocFlags.gpuDirectRDMACapable;
      break;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: {
      auto it = m.access.find(device);
      *static_cast<unsigned int*>(data) = it == m.access.end() ? 0 : it->second;
      break;
    }
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      *static_cast<void**>(data) = nullptr;
      break;
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
      *static_cast<size_t*>(data) = m.size;
      break;
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
      *static_cast<CUdeviceptr*>(data) = m.va;
      break;
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:  // the handle's: the same wherever it is mapped
      *static_cast<unsigned long long*>(data) = h->block_id;
      break;
    default:  // HOST_POINTER: device memory has none
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

}  // namespace p2psim::cuda::detail

CUresult cuMemGetAllocationGranularity(size_t* g, const CUmemAllocationProp* prop,
                                       CUmemAllocationGranularity_flags option) {
  if (CUresult r = check_init()) return r;
  if (!g || !prop) return CUDA_ERROR_INVALID_VALUE;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
    return CUDA_ERROR_INVALID_VALUE;
  *g = granularity;  // whatever the properties say (driver 580 does not look at them here)
  return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
  if (CUresult r = check_init()) return r;
  if (!ptr || flags || size == 0 || size % granularity) return CUDA_ERROR_INVALID_VALUE;
  if (alignment && !power_of_two(alignment)) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t align = std::max<uint64_t>(alignment, granularity);
  if (addr % align) return CUDA_ERROR_INVALID_VALUE;  // a hint must meet the alignment
  if (size > p2psim::nv::uva_limit - p2psim::nv::uva_base) return CUDA_ERROR_OUT_OF_MEMORY;
  const CUctx_st* c = current_context();
  auto va = drv().vmm_reserve(pid(), c ? c->id : 0, size, align, addr);
  if (!va) return CUDA_ERROR_OUT_OF_MEMORY;
  *ptr = *va;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  if (CUresult r = check_init()) return r;
  if (!ptr || !drv().vmm_free_reservation(pid(), ptr, size)) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                     const CUmemAllocationProp* prop, unsigned long long flags) {
  if (CUresult r = check_init()) return r;
  if (!handle || !prop || flags || size == 0 || size % granularity) return CUDA_ERROR_INVALID_VALUE;
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  vmm_handle h;
  h.prop = *prop;
  h.prop.win32HandleMetaData = nullptr;
  const unsigned types = prop->requestedHandleTypes;
  if (types & (CU_MEM_HANDLE_TYPE_WIN32 | CU_MEM_HANDLE_TYPE_WIN32_KMT))
    return CUDA_ERROR_INVALID_VALUE;
  if (types & CU_MEM_HANDLE_TYPE_FABRIC) return CUDA_ERROR_NOT_PERMITTED;  // no IMEX channel
  // Bits past the known types are dropped, as driver 580 reports them.
  h.prop.requestedHandleTypes =
      CUmemAllocationHandleType(types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  h.prop.allocFlags.gpuDirectRDMACapable = prop->allocFlags.gpuDirectRDMACapable ? 1 : 0;
  switch (prop->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE: {
      if (prop->location.id < 0 || prop->location.id >= drv().gpu_count())
        return CUDA_ERROR_INVALID_DEVICE;
      auto memory = drv().vmm_create(pid(), prop->location.id, size,
                                     h.prop.allocFlags.gpuDirectRDMACapable != 0);
      if (!memory) return CUDA_ERROR_OUT_OF_MEMORY;
      h.memory = *memory;
      break;
    }
    // Host memory: driver 580 reports it as NUMA node 0's. It is recorded, not made: mapping
    // it is not modelled (cuMemMap answers NOT_SUPPORTED).
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      h.prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
      if (prop->location.type == CU_MEM_LOCATION_TYPE_HOST) h.prop.location.id = 0;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  h.block_id = drv().new_buffer_id();
  h.pid = pid();
  const CUmemGenericAllocationHandle value = global().next_vmm_handle++;
  global().vmm_handles[value] = h;
  *handle = value;
  return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  if (CUresult r = check_init()) return r;
  vmm_handle* h = vmm_handle_of(handle);
  if (!h || h->refs == 0) return CUDA_ERROR_INVALID_VALUE;  // never made, or released already
  --h->refs;
  drop_if_unused(handle);
  return CUDA_SUCCESS;
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                CUmemGenericAllocationHandle handle) {
  if (CUresult r = check_init()) return r;
  const vmm_handle* h = vmm_handle_of(handle);
  if (!prop || !h) return CUDA_ERROR_INVALID_VALUE;
  *prop = h->prop;
  return CUDA_SUCCESS;
}

// The whole handle at a 2 MiB-aligned VA of a reservation (the mapping may run past the
// reservation's end: driver 580 takes it), with no access until cuMemSetAccess.
CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  if (CUresult r = check_init()) return r;
  if (!ptr || flags || !handle || size == 0 || ptr % granularity) return CUDA_ERROR_INVALID_VALUE;
  vmm_handle* h = vmm_handle_of(handle);
  if (!h || !drv().vmm_reservation_of(pid(), ptr)) return CUDA_ERROR_INVALID_VALUE;
  // Only a whole handle from its start maps (the reference: "offset ... must be zero").
  auto memory = h->memory ? drv().vmm_memory_of(h->memory) : std::nullopt;
  if (offset || !memory || size != memory->second) return CUDA_ERROR_NOT_SUPPORTED;
  if (!drv().vmm_map(pid(), ptr, h->memory, handle)) return CUDA_ERROR_INVALID_VALUE;
  ++h->mappings;
  return CUDA_SUCCESS;
}

// Every mapping inside the range goes (none there: nothing to do); one only partly inside
// refuses the whole call.
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  if (CUresult r = check_init()) return r;
  if (!ptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
  synchronize_process();
  auto gone = drv().vmm_unmap(pid(), ptr, size);
  if (!gone) return CUDA_ERROR_INVALID_VALUE;
  for (const auto& m : *gone) {
    if (vmm_handle* h = vmm_handle_of(m.handle)) --h->mappings;
    drop_if_unused(m.handle);
  }
  return CUDA_SUCCESS;
}

// The range must be whole mappings lying back to back; each descriptor sets one device's access.
CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  if (CUresult r = check_init()) return r;
  if (!ptr || size == 0 || !desc || count == 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    const CUmemAccessDesc& d = desc[i];
    if (d.location.type == CU_MEM_LOCATION_TYPE_HOST) return CUDA_ERROR_NOT_SUPPORTED;
    if (d.location.type != CU_MEM_LOCATION_TYPE_DEVICE || d.location.id < 0 ||
        d.location.id >= drv().gpu_count())
      return CUDA_ERROR_INVALID_VALUE;
    if (d.flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && d.flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        d.flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
      return CUDA_ERROR_INVALID_VALUE;
  }
  const auto over = drv().vmm_mappings_over(pid(), ptr, size);
  if (over.empty() || over.front()->va != ptr || over.back()->va + over.back()->size != ptr + size)
    return CUDA_ERROR_INVALID_VALUE;
  for (auto* m : over)
    for (size_t i = 0; i < count; ++i) {
      if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_NONE)
        m->access.erase(desc[i].location.id);
      else
        m->access[desc[i].location.id] = desc[i].flags;
    }
  return CUDA_SUCCESS;
}

CUresult cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr) {
  if (CUresult r = check_init()) return r;
  if (!flags || !location) return CUDA_ERROR_INVALID_VALUE;
  const auto* m = vmm_mapping_at(ptr);
  if (!m) return CUDA_ERROR_INVALID_VALUE;
  if (location->type == CU_MEM_LOCATION_TYPE_HOST) {
    *flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;  // what driver 580 answers for the host
    return CUDA_SUCCESS;
  }
  if (location->type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
  if (location->id < 0 || location->id >= drv().gpu_count()) return CUDA_ERROR_INVALID_DEVICE;
  auto it = m->access.find(location->id);
  *flags = it == m->access.end() ? 0 : it->second;
  return CUDA_SUCCESS;
}

// Another reference to the handle mapped at `addr` (any byte of the mapping).
CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  if (CUresult r = check_init()) return r;
  if (!handle || !addr) return CUDA_ERROR_INVALID_VALUE;
  const auto* m = vmm_mapping_at(CUdeviceptr(reinterpret_cast<uintptr_t>(addr)));
  vmm_handle* h = m ? vmm_handle_of(m->handle) : nullptr;
  if (!h) return CUDA_ERROR_INVALID_VALUE;  // not VMM memory (cuMemAlloc's has no handle)
  ++h->refs;
  *handle = m->handle;
  return CUDA_SUCCESS;
}

// A POSIX descriptor for a handle's memory (cuMemExportToShareableHandle): it holds the memory
// as a handle does, until its last descriptor closes, and any process that has it imports a
// handle of its own.
struct vmm_share : p2psim::kernel::driver_file {
  vmm_share(nvidia_driver& d, uint64_t m, const CUmemAllocationProp& p)
      : driver(d), memory(m), prop(p) {
    driver.vmm_add_handle(memory, 0);
  }
  ~vmm_share() override { driver.vmm_drop_handle(memory, 0); }
  nvidia_driver& driver;  // outlives the OS whose descriptors hold this
  uint64_t memory;
  CUmemAllocationProp prop;
};

CUresult cuMemExportToShareableHandle(void* shareableHandle, CUmemGenericAllocationHandle handle,
                                      CUmemAllocationHandleType handleType,
                                      unsigned long long flags) {
  if (CUresult r = check_init()) return r;
  const vmm_handle* h = vmm_handle_of(handle);
  if (!shareableHandle || !h || flags || handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
      !(h->prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return CUDA_ERROR_INVALID_VALUE;  // also a handle made without POSIX_FD among its types
  if (!h->memory) return CUDA_ERROR_NOT_SUPPORTED;  // host memory: not modelled
  *static_cast<int*>(shareableHandle) = p2psim::kernel::current_os().dma_bufs().open_fd(
      pid(), std::make_shared<vmm_share>(drv(), h->memory, h->prop));
  return CUDA_SUCCESS;
}

// A new handle on the memory behind the caller's descriptor, every time; it does not carry the
// exported handle's shareable types (driver 580 reports none).
CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* osHandle,
                                        CUmemAllocationHandleType shHandleType) {
  if (CUresult r = check_init()) return r;
  if (!handle || shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return CUDA_ERROR_INVALID_VALUE;
  const int fd = int(reinterpret_cast<intptr_t>(osHandle));
  auto* share =
      dynamic_cast<vmm_share*>(p2psim::kernel::current_os().dma_bufs().other_file(pid(), fd));
  if (!share) return CUDA_ERROR_UNKNOWN;  // not open, or not such a descriptor (driver 580)
  vmm_handle h;
  h.memory = share->memory;
  h.prop = share->prop;
  h.prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
  h.block_id = drv().new_buffer_id();
  h.pid = pid();
  drv().vmm_add_handle(h.memory, h.pid);
  const CUmemGenericAllocationHandle value = global().next_vmm_handle++;
  global().vmm_handles[value] = h;
  *handle = value;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  if (CUresult r = check_init()) return r;
  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
  if (dev < 0 || dev >= drv().gpu_count()) return CUDA_ERROR_INVALID_DEVICE;
  *flags = 0;
  *active = 0;
  return CUDA_SUCCESS;
}
