// cuMemGetHandleForAddressRange: device memory exported as a dma-buf file descriptor, the
// upstream Linux path a third-party driver imports with dma_buf_get (GPUDirect RDMA 13.3, 4.1).
// The checks and their order are libcuda 580's on an H200 (tests/data/cuda_probe/
// h200_cuda13_dmabuf.txt): the arguments first, *handle untouched; then *handle = -1 and the
// range, which must be device memory the calling process has mapped (the exporter's check,
// models/driver/nvidia/dma_buf_export.cpp); the PCIe-only mapping flag last.
#include <cerrno>

#include "models/driver/cuda/cuda_state.h"

using namespace p2psim::cuda::detail;

namespace {

constexpr unsigned long long page = p2psim::kernel::page_bytes;

}  // namespace

CUresult cuMemGetHandleForAddressRange(void* handle, CUdeviceptr dptr, size_t size,
                                       CUmemRangeHandleType handleType, unsigned long long flags) {
  if (!handle || !dptr || !size || dptr % page || size % page || dptr + size < dptr)
    return CUDA_ERROR_INVALID_VALUE;
  // Driver 580 takes any flags with the PCIe bit (and refuses them later, below), and refuses
  // any other flags at once.
  if (flags && !(flags & CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE))
    return CUDA_ERROR_INVALID_VALUE;
  // Before cuInit libcuda 580 says NOT_SUPPORTED here, not NOT_INITIALIZED.
  if (check_init()) return CUDA_ERROR_NOT_SUPPORTED;
  if (!current_context()) return CUDA_ERROR_INVALID_CONTEXT;
  if (handleType != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD) return CUDA_ERROR_INVALID_VALUE;
  int& fd = *static_cast<int*>(handle);
  fd = -1;
  auto& driver = *installed_driver();
  const auto pid = p2psim::kernel::current_pid();
  // Host memory (pinned or not) is not the driver's to export: HOST_ALLOC_DMA_BUF_SUPPORTED 0.
  if (!driver.exportable(pid, dptr, size)) return CUDA_ERROR_INVALID_VALUE;
  // The mapping type that asks for BAR1 addresses only: not supported where the probe ran
  // (a VM); the model follows it.
  if (flags & CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE) return CUDA_ERROR_NOT_SUPPORTED;
  const int r = driver.export_dma_buf(pid, dptr, size);
  if (r == -ENOMEM) return CUDA_ERROR_OUT_OF_MEMORY;
  if (r < 0) return CUDA_ERROR_INVALID_VALUE;
  fd = r;
  return CUDA_SUCCESS;
}
