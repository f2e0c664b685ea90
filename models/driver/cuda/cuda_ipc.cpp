// CUDA IPC: cuIpcGetMemHandle / cuIpcOpenMemHandle / cuIpcCloseMemHandle, with the checks, their
// order and the results of libcuda 580 on an H200 (tests/data/cuda_probe/h200_cuda13_ipc.txt);
// the mapping itself is the driver's (models/driver/nvidia/ipc.cpp). A handle names the export
// by its id and the exporting process; its first and last bytes are not read (driver 580 opened
// handles with either changed).
#include <cstring>

#include "models/driver/cuda/cuda_state.h"

using namespace p2psim::cuda::detail;
using p2psim::nv::nvidia_driver;

namespace {

constexpr uint32_t magic = 0x50495043;  // the model's handles, for telling them from garbage

struct handle_fields {  // where the model puts what it reads back, past byte 0
  uint64_t id;
  uint64_t size;
  uint64_t offset;
  int32_t pid;
  uint32_t magic;
};
constexpr size_t fields_at = 8;
static_assert(fields_at + sizeof(handle_fields) < CU_IPC_HANDLE_SIZE - 1);

}  // namespace

CUresult cuIpcGetMemHandle(CUipcMemHandle* pHandle, CUdeviceptr dptr) {
  if (!pHandle || !dptr) return CUDA_ERROR_INVALID_VALUE;  // before cuInit too
  if (check_init()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
  auto& driver = *installed_driver();
  const auto pid = p2psim::kernel::current_pid();
  const uint64_t id = driver.ipc_export_of(pid, dptr);
  if (!id) return CUDA_ERROR_INVALID_VALUE;  // not a live cuMemAlloc allocation of the caller
  const nvidia_driver::ipc_export& e = *driver.find_ipc_export(id);
  const handle_fields f{id, e.size, e.offset, int32_t(pid), magic};
  std::memset(pHandle->reserved, 0, sizeof pHandle->reserved);
  std::memcpy(pHandle->reserved + fields_at, &f, sizeof f);
  return CUDA_SUCCESS;
}

CUresult cuIpcOpenMemHandle(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags) {
  if (check_init()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!pdptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = current_context();
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  // Driver 580 requires CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS and ignores the other bits.
  if (!(Flags & CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)) return CUDA_ERROR_INVALID_VALUE;
  handle_fields f;
  std::memcpy(&f, handle.reserved + fields_at, sizeof f);
  auto& driver = *installed_driver();
  const nvidia_driver::ipc_export* e = driver.find_ipc_export(f.id);
  if (f.magic != magic || !e || e->pid != f.pid || e->size != f.size || e->offset != f.offset)
    return CUDA_ERROR_INVALID_VALUE;
  // Another GPU's memory: the context must be able to reach it (the flag enables the access).
  if (e->gpu != ctx->device && !driver.peer_reachable(ctx->device, e->gpu))
    return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  uint64_t va = 0;
  switch (driver.ipc_open(ctx->id, f.id, va)) {
    case nvidia_driver::ipc_open_result::mapped:
      *pdptr = va;
      return CUDA_SUCCESS;
    case nvidia_driver::ipc_open_result::own_process:
      return CUDA_ERROR_INVALID_CONTEXT;  // a process's own handle
    case nvidia_driver::ipc_open_result::other_context:
      return CUDA_ERROR_INVALID_HANDLE;  // open in another context of the process already
    case nvidia_driver::ipc_open_result::out_of_va:
      return CUDA_ERROR_OUT_OF_MEMORY;
    case nvidia_driver::ipc_open_result::unknown:
      break;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  if (check_init()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
  // Only the pointer an open returned; pending copies through it finish first.
  auto& driver = *installed_driver();
  const auto pid = p2psim::kernel::current_pid();
  const nvidia_driver::allocation* a = driver.find_allocation(pid, dptr);
  if (!a || a->va != dptr || !a->ipc_export) return CUDA_ERROR_INVALID_VALUE;
  if (CUctx_st* c = context_of(a->ctx)) synchronize_context(c);
  return driver.ipc_close(pid, dptr) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
