// Shorthands for the CUDA API conformance tests, and an executor that records what the CUDA
// model asks of it.
#pragma once

#include <catch2/catch.hpp>

#include <vector>

#include "models/driver/cuda/copy_executor.h"
#include "models/driver/cuda/cuda.h"
#include "models/driver/nvidia/nv-p2p.h"
#include "tests/conformance/fixture.h"

namespace p2psim::test {

inline constexpr uint64_t k64 = 64 * 1024;

// cuInit and a context on `dev`, made current.
inline CUcontext cuda_context(CUdevice dev = 0, unsigned int flags = 0) {
  REQUIRE(cuInit(0) == CUDA_SUCCESS);
  CUcontext c = nullptr;
  REQUIRE(cuCtxCreate(&c, flags, dev) == CUDA_SUCCESS);
  return c;
}

inline CUdeviceptr cuda_alloc(size_t bytes) {
  CUdeviceptr p = 0;
  REQUIRE(cuMemAlloc(&p, bytes) == CUDA_SUCCESS);
  return p;
}

template <typename T>
CUresult attribute(T& out, CUpointer_attribute a, CUdeviceptr p) {
  return cuPointerGetAttribute(&out, a, p);
}

inline unsigned long long buffer_id(CUdeviceptr p) {
  unsigned long long id = 0;
  REQUIRE(attribute(id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p) == CUDA_SUCCESS);
  return id;
}

inline unsigned int sync_memops(CUdeviceptr p) {
  unsigned int v = 7;
  REQUIRE(attribute(v, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p) == CUDA_SUCCESS);
  return v;
}

inline CUDA_POINTER_ATTRIBUTE_P2P_TOKENS tokens(CUdeviceptr p) {
  CUDA_POINTER_ATTRIBUTE_P2P_TOKENS t{};
  REQUIRE(attribute(t, CU_POINTER_ATTRIBUTE_P2P_TOKENS, p) == CUDA_SUCCESS);
  return t;
}

// Copies as the default executor does, and remembers every request.
struct recording_executor : cuda::copy_executor {
  std::vector<cuda::copy_request> copies;
  std::vector<cuda::sync_request> syncs;
  cuda::instant_copy_executor instant{kernel::current_os().nvidia()};  // of the world made first
  void copy(const cuda::copy_request& r) override {
    copies.push_back(r);
    instant.copy(r);
  }
  void synchronize(const cuda::sync_request& r) override { syncs.push_back(r); }
};

// Sets the current OS's copy executor for a scope.
struct executor_scope {
  explicit executor_scope(cuda::copy_executor& e) { kernel::current_os().set_copy_executor(&e); }
  ~executor_scope() { kernel::current_os().set_copy_executor(nullptr); }
};

// A free callback that does what the guide says (6.4): free the page table.
struct revocation {
  nvidia_p2p_page_table_t* table = nullptr;
  int calls = 0;
  static void callback(void* data) {
    auto* r = static_cast<revocation*>(data);
    ++r->calls;
    nvidia_p2p_free_page_table(r->table);
  }
};

}  // namespace p2psim::test
