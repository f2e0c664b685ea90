// The name of each CUresult the CUDA model returns: what cuGetErrorName answers, and what a
// scenario step's `expect` may say. Header-only, so that the scenario reader (plain C++,
// built on its own for fuzzing) knows the names without linking the model.
#pragma once

#include "models/driver/cuda/cuda.h"

namespace p2psim::cuda {

struct cu_result_entry {
  CUresult code;
  const char* name;
};

#define P2PSIM_CU_RESULT(e) \
  { e, #e }
inline constexpr cu_result_entry cu_result_names[] = {
    P2PSIM_CU_RESULT(CUDA_SUCCESS),
    P2PSIM_CU_RESULT(CUDA_ERROR_INVALID_VALUE),
    P2PSIM_CU_RESULT(CUDA_ERROR_OUT_OF_MEMORY),
    P2PSIM_CU_RESULT(CUDA_ERROR_NOT_INITIALIZED),
    P2PSIM_CU_RESULT(CUDA_ERROR_DEINITIALIZED),
    P2PSIM_CU_RESULT(CUDA_ERROR_NO_DEVICE),
    P2PSIM_CU_RESULT(CUDA_ERROR_INVALID_DEVICE),
    P2PSIM_CU_RESULT(CUDA_ERROR_INVALID_CONTEXT),
    P2PSIM_CU_RESULT(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED),
    P2PSIM_CU_RESULT(CUDA_ERROR_INVALID_HANDLE),
    P2PSIM_CU_RESULT(CUDA_ERROR_NOT_FOUND),
    P2PSIM_CU_RESULT(CUDA_ERROR_NOT_READY),
    P2PSIM_CU_RESULT(CUDA_ERROR_ILLEGAL_ADDRESS),
    P2PSIM_CU_RESULT(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED),
    P2PSIM_CU_RESULT(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED),
    P2PSIM_CU_RESULT(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED),
    P2PSIM_CU_RESULT(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED),
    P2PSIM_CU_RESULT(CUDA_ERROR_CONTEXT_IS_DESTROYED),
    P2PSIM_CU_RESULT(CUDA_ERROR_NOT_PERMITTED),
    P2PSIM_CU_RESULT(CUDA_ERROR_NOT_SUPPORTED),
    P2PSIM_CU_RESULT(CUDA_ERROR_UNKNOWN)};
#undef P2PSIM_CU_RESULT

// "CUDA_ERROR_INVALID_VALUE" for CUDA_ERROR_INVALID_VALUE; nullptr for a value not listed.
inline const char* cu_result_name(CUresult r) {
  for (const auto& e : cu_result_names)
    if (e.code == r) return e.name;
  return nullptr;
}

}  // namespace p2psim::cuda
