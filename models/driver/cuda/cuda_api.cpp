// cuda.h over the NVIDIA driver model: per-process initialization, devices, contexts and
// cuMemAlloc memory (GPUDirect RDMA 13.3, 5.6, 7.1). Pointer attributes are in
// cuda_pointer.cpp, copies and streams in cuda_memcpy.cpp.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "models/driver/cuda/cu_result_names.h"
#include "models/driver/cuda/cuda_state.h"

namespace p2psim::cuda::detail {

nv::nvidia_driver* installed_driver() {
  kernel::os* o = kernel::bound_os();
  return o ? &o->nvidia() : nullptr;
}

state& global() {
  return kernel::current_os().cuda_state();
}

process_state& me() {
  return global().processes[kernel::current_pid()];
}

CUresult check_init() {
  if (!installed_driver() || !me().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  return CUDA_SUCCESS;
}

CUctx_st* live_context(CUcontext c) {
  if (!c) return nullptr;
  for (auto& h : global().contexts)
    if (h.get() == c)
      return h->alive && h->pid == kernel::current_pid() && installed_driver()->find_context(h->id)
                 ? h.get()
                 : nullptr;
  return nullptr;
}

CUctx_st* current_context() {
  return live_context(me().current());
}

CUctx_st* context_of(int id) {
  for (auto& h : global().contexts)
    if (h->id == id) return live_context(h.get());
  return nullptr;
}

void synchronize_context(CUctx_st* ctx) {
  kernel::current_os().copies().synchronize({kernel::current_pid(), ctx, nullptr, true});
}

gpu::rdma_visibility* visibility_of(int ordinal) {
  return installed_driver()->gpu(ordinal).visibility;
}

void rdma_sync(int ordinal) {
  if (gpu::rdma_visibility* v = visibility_of(ordinal)) v->cpu_sync();
}

}  // namespace p2psim::cuda::detail

using namespace p2psim::cuda::detail;
using p2psim::nv::nvidia_driver;

namespace {

nvidia_driver& drv() {
  return *installed_driver();
}

bool valid_device(CUdevice dev) {
  return dev >= 0 && dev < drv().gpu_count();
}

}  // namespace

// ---- initialization, version, devices ----

CUresult cuInit(unsigned int Flags) {
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  // No NVIDIA driver, or one without GPUs: what libcuda says when it finds no GPU.
  if (!installed_driver() || drv().gpu_count() == 0) return CUDA_ERROR_NO_DEVICE;
  me().initialized = true;
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* driverVersion) {
  if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  if (CUresult r = check_init()) return r;
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = drv().gpu_count();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (CUresult r = check_init()) return r;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  if (CUresult r = check_init()) return r;
  if (!pi) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_INTEGRATED:
      *pi = 0;
      break;  // discrete GPUs behind PCIe
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
      *pi = 1;
      break;  // UVA (guide 7.1)
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
      *pi = 0;
      break;  // no cuMemAllocManaged here
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED:
      *pi = 1;
      break;  // nv-p2p pins VMM memory made gpuDirectRDMACapable; dma-buf exports any
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED:
      *pi = 1;
      break;  // nv-p2p (4.1.2)
    // cuFlushGPUDirectRDMAWrites; the stream memory operations (MEMOPS) are not modelled.
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS:
      *pi = CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST;
      break;
    // The GPU's configured attribute; without a visibility model, OWNER: the GPU's own copies
    // read the VRAM store that BAR1 writes land in.
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING:
      if (const p2psim::gpu::rdma_visibility* v = visibility_of(dev))
        *pi = int(v->ordering());
      else
        *pi = CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER;
      break;
    // cuMemGetHandleForAddressRange exports device memory, not host memory (driver 580).
    case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED:
      *pi = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED:
      *pi = 0;
      break;
    // Page-locked host memory (cuda_host_memory.cpp): mapped at its host address, any range
    // may be registered, read-only too; pageable memory is not reachable from the GPUs.
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED:
      *pi = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES:
      *pi = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES:
      *pi = 0;
      break;  // no cuFlushRemoteWrites (an H200 says 0 too)
    // The VMM API (cuda_vmm.cpp); compressible memory is accepted, its compression not
    // modelled.
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED:
      *pi = 1;
      break;
    // Not modelled: fabric handles, Windows handles, host memory through VMM, sparse and
    // deferred-mapping CUDA arrays, memory pools, multicast, IPC events.
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES:
    case CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED:
      *pi = 0;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (CUresult r = check_init()) return r;
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  const std::string& n = drv().gpu(dev).name;
  const size_t k = std::min(n.size(), size_t(len - 1));
  std::memcpy(name, n.data(), k);
  name[k] = '\0';
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t* bytes, CUdevice dev) {
  if (CUresult r = check_init()) return r;
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = drv().gpu(dev).vram->capacity();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  if (CUresult r = check_init()) return r;
  if (!uuid) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  static_assert(sizeof(uuid->bytes) == NVIDIA_P2P_GPU_UUID_LEN);
  std::memcpy(uuid->bytes, drv().gpu(dev).uuid.data(), sizeof(uuid->bytes));
  return CUDA_SUCCESS;
}

CUresult cuFlushGPUDirectRDMAWrites(CUflushGPUDirectRDMAWritesTarget target,
                                    CUflushGPUDirectRDMAWritesScope scope) {
  if (CUresult r = check_init()) return r;
  if (target != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX) return CUDA_ERROR_INVALID_VALUE;
  if (scope != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER &&
      scope != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES)
    return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* c = current_context();
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  // Scope values are ordering values: a scope the attribute already covers has nothing
  // pending, so the flush is the documented no-op without a test here.
  if (p2psim::gpu::rdma_visibility* v = visibility_of(c->device))
    v->flush(p2psim::gpu::writes_ordering(scope));
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char** pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  *pStr = p2psim::cuda::cu_result_name(error);
  return *pStr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// ---- contexts ----

CUresult cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  if (CUresult r = check_init()) return r;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  // At most one scheduling policy, and no bits beyond the defined ones.
  const unsigned sched = flags & CU_CTX_SCHED_MASK;
  if ((flags & ~unsigned(CU_CTX_FLAGS_MASK)) || (sched & (sched - 1)))
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  const int id = drv().create_context(p2psim::kernel::current_pid(), dev);
  if (!id) return CUDA_ERROR_INVALID_DEVICE;
  auto h = std::make_unique<CUctx_st>();
  h->pid = p2psim::kernel::current_pid();
  h->id = id;
  h->device = dev;
  h->flags = flags;
  *pctx = h.get();
  me().stack.push_back(h.get());  // pushed: current, and the old current comes back later
  global().contexts.push_back(std::move(h));
  return CUDA_SUCCESS;
}

CUresult cuCtxDestroy(CUcontext ctx) {
  if (CUresult r = check_init()) return r;
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* c = live_context(ctx);
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  synchronize_context(c);
  // Frees every allocation of the context; pins on them are revoked through their free
  // callbacks before the memory goes (guide 5.3: "cuMemFree, cuCtxDestroy, etc.").
  drv().destroy_context(c->pid, c->id);
  drop_host_memory_of(c);
  c->alive = false;
  for (auto& s : global().streams)
    if (s->ctx == c) s->alive = false;
  if (me().current() == c) me().stack.pop_back();  // the one below is current again
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* pctx) {
  if (CUresult r = check_init()) return r;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  // The top of the stack, even a context destroyed while it was there twice (driver 580).
  *pctx = me().current();
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (CUresult r = check_init()) return r;
  // libcuda 580 accepts a destroyed handle here and crashes on the next call; the model
  // refuses it instead (a use after free, not a behaviour to reproduce).
  if (ctx && !live_context(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  auto& stack = me().stack;
  if (!ctx) {
    if (!stack.empty()) stack.pop_back();  // NULL pops
  } else if (stack.empty()) {
    stack.push_back(ctx);
  } else {
    stack.back() = ctx;  // replaces the top
  }
  return CUDA_SUCCESS;
}

// Not probed on the real driver: the documented answers (a destroyed or NULL context to push,
// an empty stack to pop: CUDA_ERROR_INVALID_CONTEXT).
CUresult cuCtxPushCurrent(CUcontext ctx) {
  if (CUresult r = check_init()) return r;
  if (!live_context(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  me().stack.push_back(ctx);
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent(CUcontext* pctx) {
  if (CUresult r = check_init()) return r;
  auto& stack = me().stack;
  if (stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx) *pctx = stack.back();
  stack.pop_back();
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  if (CUresult r = check_init()) return r;
  CUctx_st* c = current_context();
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  synchronize_context(c);
  rdma_sync(c->device);
  return CUDA_SUCCESS;
}

// ---- memory ----

CUresult cuMemAlloc(CUdeviceptr* dptr, size_t bytesize) {
  if (CUresult r = check_init()) return r;
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* c = current_context();
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  if (bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  // More than the whole UVA range can never fit (and would overflow the driver's rounding).
  if (bytesize > p2psim::nv::uva_limit - p2psim::nv::uva_base) return CUDA_ERROR_OUT_OF_MEMORY;
  auto va = drv().mem_alloc(c->id, bytesize);
  if (!va) return CUDA_ERROR_OUT_OF_MEMORY;  // VRAM (or UVA space) exhausted
  *dptr = *va;
  return CUDA_SUCCESS;
}

CUresult cuMemFree(CUdeviceptr dptr) {
  if (CUresult r = check_init()) return r;
  if (dptr == 0) return CUDA_SUCCESS;  // like free(NULL) (libcuda 580)
  const auto pid = p2psim::kernel::current_pid();
  auto* a = drv().find_allocation(pid, dptr);
  if (!a || a->va != dptr) return CUDA_ERROR_INVALID_VALUE;  // only an allocation's base
  // Another process's memory opened by CUDA IPC goes with cuIpcCloseMemHandle (what libcuda
  // answers here was not recorded).
  if (a->ipc_export) return CUDA_ERROR_INVALID_VALUE;
  if (CUctx_st* c = context_of(a->ctx)) synchronize_context(c);  // "may synchronize"
  drv().mem_free(pid, dptr);  // revokes pins through their free callbacks first (5.3)
  return CUDA_SUCCESS;
}

// Free VRAM as the driver counts it: 64 KiB frames mapped by allocations or held by pins and
// dma-bufs (a dma-buf's memory is still taken after cuMemFree: h200_cuda13_dmabuf.txt).
CUresult cuMemGetInfo(size_t* free, size_t* total) {
  if (CUresult r = check_init()) return r;
  CUctx_st* c = current_context();
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  if (!free || !total) return CUDA_ERROR_INVALID_VALUE;
  *total = drv().gpu(c->device).vram->capacity();
  *free = *total - drv().vram_used_bytes(c->device);
  return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  if (CUresult r = check_init()) return r;
  auto* a = drv().find_allocation(p2psim::kernel::current_pid(), dptr);
  // VMM memory: the mapping, once the current context's GPU may use it (driver 580).
  if (const auto* m = a ? nullptr : vmm_mapping_at(dptr)) {
    const CUctx_st* c = current_context();
    if (!c) return CUDA_ERROR_INVALID_CONTEXT;
    if (!m->access.count(c->device)) return CUDA_ERROR_NOT_FOUND;
    if (pbase) *pbase = m->va;
    if (psize) *psize = m->size;
    return CUDA_SUCCESS;
  }
  if (!a) return CUDA_ERROR_NOT_FOUND;  // the driver API's answer for an unknown address
  if (pbase) *pbase = a->va;            // both outputs are optional
  if (psize) *psize = a->size;
  return CUDA_SUCCESS;
}
