// Pointer attributes and address ranges: what a registration cache and a third-party driver
// learn about a buffer (GPUDirect RDMA 13.3, 5.6 Tokens Usage, 5.7 Synchronization, 6.2
// Pinning, 6.5 Buffer ID Tag Check, 7.2 Userspace API).
#include <set>

#include "tests/conformance/cuda_helpers.h"

using namespace p2psim;
using namespace p2psim::test;

TEST_CASE("GPUDirect RDMA 13.3 6.5: cuMemGetAddressRange gives the allocation of any pointer in it",
          "[cuda][pointer]") {
  world w;
  cuda_context();
  const CUdeviceptr p = cuda_alloc(100000);
  for (CUdeviceptr q : {p, p + 1, p + 50000, p + 99999}) {
    CUdeviceptr base = 0;
    size_t size = 0;
    CHECK(cuMemGetAddressRange(&base, &size, q) == CUDA_SUCCESS);
    CHECK(base == p);
    CHECK(size == 100000);
  }
  size_t size = 0;
  CHECK(cuMemGetAddressRange(nullptr, &size, p + 7) == CUDA_SUCCESS);  // outputs are optional
  CHECK(size == 100000);
  int host = 0;
  CUdeviceptr base = 0;
  CHECK(cuMemGetAddressRange(&base, &size, p + 100000) == CUDA_ERROR_NOT_FOUND);
  CHECK(cuMemGetAddressRange(&base, &size, CUdeviceptr(&host)) == CUDA_ERROR_NOT_FOUND);
  REQUIRE(cuMemFree(p) == CUDA_SUCCESS);
  CHECK(cuMemGetAddressRange(&base, &size, p) == CUDA_ERROR_NOT_FOUND);
}

TEST_CASE("GPUDirect RDMA 13.3 5.6: P2P tokens are the context's and p2pToken is randomized",
          "[cuda][pointer]") {
  // The guide's randomized p2pToken (driver 580 hands out 0: tests/data/cuda_probe).
  world_config c = gpus(2);
  c.driver.random_p2p_token = true;
  world w(c);
  CUcontext a = cuda_context(0);
  const CUdeviceptr p = cuda_alloc(k64), q = cuda_alloc(3 * k64);
  const auto tp = tokens(p), tq = tokens(q + 5);
  CHECK(tp.p2pToken != 0);
  CHECK(tp.p2pToken == tq.p2pToken);  // consistent within a context
  CHECK(tp.vaSpaceToken == tq.vaSpaceToken);
  cuda_context(0);  // a second context on the same GPU is another VA space
  const auto tr = tokens(cuda_alloc(k64));
  CHECK(tr.p2pToken != tp.p2pToken);
  CHECK(tr.vaSpaceToken != tp.vaSpaceToken);
  // The tokens are what lets another process pin the buffer (7.3, 5.6).
  REQUIRE(cuCtxSetCurrent(a) == CUDA_SUCCESS);
  kernel::as_process other(2);
  revocation r;
  CHECK(nvidia_p2p_get_pages(0, 0, p, k64, &r.table, revocation::callback, &r) == -EINVAL);
  CHECK(nvidia_p2p_get_pages(tp.p2pToken, tp.vaSpaceToken, p, k64, &r.table, revocation::callback,
                             &r) == 0);
}

TEST_CASE("GPUDirect RDMA 13.3 5.7: retrieving P2P tokens turns SYNC_MEMOPS on (legacy path)",
          "[cuda][pointer]") {
  world w;
  cuda_context();
  const CUdeviceptr p = cuda_alloc(2 * k64), q = cuda_alloc(k64);
  CHECK(sync_memops(p) == 0);
  tokens(p + k64 + 3);
  CHECK(sync_memops(p) == 1);  // for the whole allocation
  CHECK(sync_memops(q) == 0);  // and only for it
}

TEST_CASE("GPUDirect RDMA 13.3 6.2: cuPointerSetAttribute SYNC_MEMOPS covers the whole allocation",
          "[cuda][pointer]") {
  world w;
  cuda_context();
  const CUdeviceptr p = cuda_alloc(200000), q = cuda_alloc(4096);
  unsigned int flag = 1;
  CHECK(cuPointerSetAttribute(&flag, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p + 12345) == CUDA_SUCCESS);
  CHECK(sync_memops(p) == 1);
  CHECK(sync_memops(p + 199999) == 1);
  CHECK(sync_memops(q) == 0);
  flag = 0;
  CHECK(cuPointerSetAttribute(&flag, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p) == CUDA_SUCCESS);
  CHECK(sync_memops(p + 7) == 0);
  unsigned long long id = 1;
  CHECK(cuPointerSetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuPointerSetAttribute(nullptr, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p) ==
        CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("GPUDirect RDMA 13.3 7.2: BUFFER_ID is unique per allocation", "[cuda][pointer]") {
  world w;
  cuda_context();
  std::set<unsigned long long> ids;
  for (int i = 0; i < 8; ++i) {
    const CUdeviceptr p = cuda_alloc(1000 * (i + 1));
    const unsigned long long id = buffer_id(p);
    CHECK(id != 0);
    CHECK(buffer_id(p + 999) == id);  // any byte of the buffer names it
    ids.insert(id);
  }
  CHECK(ids.size() == 8);
}

TEST_CASE("GPUDirect RDMA 13.3 7.2: BUFFER_ID changes when a VA is reallocated",
          "[cuda][pointer]") {
  world w;
  cuda_context();
  const CUdeviceptr p = cuda_alloc(4 * k64);
  const unsigned long long before = buffer_id(p);
  REQUIRE(cuMemFree(p) == CUDA_SUCCESS);
  const CUdeviceptr again = cuda_alloc(4 * k64);
  REQUIRE(again == p);
  // The guide's buf_is_gpu_pinning_valid (6.5) now sees a different ID: invalidate, re-pin.
  unsigned long long now = 0;
  CHECK(attribute(now, CU_POINTER_ATTRIBUTE_BUFFER_ID, p) == CUDA_SUCCESS);
  CHECK(now != before);
}

TEST_CASE("GPUDirect RDMA 13.3 7.2: cuMemAlloc memory is device memory and not managed",
          "[cuda][pointer]") {
  world w(gpus(2));
  cuda_context(0);
  CUcontext ctx = cuda_context(1);
  const CUdeviceptr p = cuda_alloc(3 * k64), inside = p + k64 + 17;
  unsigned int type = 0, managed = 7, mapped = 0, rdma = 0;
  CHECK(attribute(type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, inside) == CUDA_SUCCESS);
  CHECK(type == CU_MEMORYTYPE_DEVICE);
  CHECK(attribute(managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, inside) == CUDA_SUCCESS);
  CHECK(managed == 0);
  CHECK(attribute(mapped, CU_POINTER_ATTRIBUTE_MAPPED, inside) == CUDA_SUCCESS);
  CHECK(mapped == 1);
  CHECK(attribute(rdma, CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE, p) == CUDA_SUCCESS);
  CHECK(rdma == 1);
  int ordinal = -1;
  CHECK(attribute(ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, inside) == CUDA_SUCCESS);
  CHECK(ordinal == 1);
  CUcontext owner = nullptr;
  CHECK(attribute(owner, CU_POINTER_ATTRIBUTE_CONTEXT, inside) == CUDA_SUCCESS);
  CHECK(owner == ctx);
  CUdeviceptr dev = 0, start = 0;
  size_t size = 0;
  CHECK(attribute(dev, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, inside) == CUDA_SUCCESS);
  CHECK(dev == inside);  // UVA: the same address on the device
  CHECK(attribute(start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, inside) == CUDA_SUCCESS);
  CHECK(attribute(size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, inside) == CUDA_SUCCESS);
  CHECK((start == p && size == 3 * k64));
  void* host = &dev;
  CHECK(attribute(host, CU_POINTER_ATTRIBUTE_HOST_POINTER, p) == CUDA_ERROR_INVALID_VALUE);
  CHECK(attribute(type, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, p) == CUDA_SUCCESS);
  CHECK(type == 1);  // as driver 580 says, though IPC is not modelled
  CHECK(cuPointerGetAttribute(nullptr, CU_POINTER_ATTRIBUTE_BUFFER_ID, p) ==
        CUDA_ERROR_INVALID_VALUE);
  REQUIRE(cuCtxSetCurrent(nullptr) == CUDA_SUCCESS);  // pops ctx: the first context is current
  REQUIRE(cuCtxSetCurrent(nullptr) == CUDA_SUCCESS);  // pops that: none
  CHECK(attribute(dev, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, p) == CUDA_ERROR_INVALID_CONTEXT);
  CHECK(attribute(type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) == CUDA_SUCCESS);  // needs none
}

TEST_CASE("GPUDirect RDMA 13.3 6.5: a freed pointer gives CUDA_ERROR_INVALID_VALUE",
          "[cuda][pointer]") {
  world w;
  cuda_context();
  const CUdeviceptr p = cuda_alloc(2 * k64);
  REQUIRE(cuMemFree(p) == CUDA_SUCCESS);
  unsigned long long id = 0;
  unsigned int v = 1;
  CUDA_POINTER_ATTRIBUTE_P2P_TOKENS t{};
  for (CUdeviceptr q : {p, p + k64}) {
    CHECK(attribute(id, CU_POINTER_ATTRIBUTE_BUFFER_ID, q) == CUDA_ERROR_INVALID_VALUE);
    CHECK(attribute(t, CU_POINTER_ATTRIBUTE_P2P_TOKENS, q) == CUDA_ERROR_INVALID_VALUE);
    CHECK(attribute(v, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, q) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuPointerSetAttribute(&v, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, q) ==
          CUDA_ERROR_INVALID_VALUE);
  }
  CHECK(cuMemFree(p) == CUDA_ERROR_INVALID_VALUE);  // and it cannot be freed twice
}

TEST_CASE("GPUDirect RDMA 13.3 7.2: a host pointer gives CUDA_ERROR_INVALID_VALUE",
          "[cuda][pointer]") {
  world w;
  cuda_context();
  const CUdeviceptr mine = cuda_alloc(k64);
  CUdeviceptr foreign = 0;
  {
    kernel::as_process other(2);
    cuda_context();
    foreign = cuda_alloc(k64) + k64;  // not allocated in process 1
    (void)cuda_alloc(k64);
  }
  int on_stack = 0;
  std::vector<char> on_heap(64);
  unsigned long long id = 0;
  unsigned int flag = 1;
  for (CUdeviceptr q :
       {CUdeviceptr(&on_stack), CUdeviceptr(on_heap.data()), CUdeviceptr(0), mine + k64, foreign}) {
    CHECK(attribute(id, CU_POINTER_ATTRIBUTE_BUFFER_ID, q) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuPointerSetAttribute(&flag, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, q) ==
          CUDA_ERROR_INVALID_VALUE);
  }
}

TEST_CASE("GPUDirect RDMA 13.3 7.2: cuPointerGetAttributes fills every requested attribute",
          "[cuda][pointer]") {
  world w(gpus(2));
  CUcontext ctx = cuda_context(1);
  const CUdeviceptr p = cuda_alloc(5000), inside = p + 4000;
  unsigned int flag = 1;
  REQUIRE(cuPointerSetAttribute(&flag, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p) == CUDA_SUCCESS);
  CUcontext owner = nullptr;
  unsigned int type = 0, sync = 0, managed = 9, mapped = 0;
  CUdeviceptr dev = 0, start = 0;
  void* host = &dev;
  unsigned long long id = 0;
  int ordinal = -1;
  size_t size = 0;
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_CONTEXT,
                                 CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                 CU_POINTER_ATTRIBUTE_HOST_POINTER,
                                 CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                                 CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                 CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                 CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                 CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                 CU_POINTER_ATTRIBUTE_MAPPED};
  void* data[] = {&owner,   &type,    &dev,   &host, &sync,  &id,
                  &managed, &ordinal, &start, &size, &mapped};
  REQUIRE(cuPointerGetAttributes(11, attrs, data, inside) == CUDA_SUCCESS);
  CHECK(owner == ctx);
  CHECK(type == CU_MEMORYTYPE_DEVICE);
  CHECK(dev == inside);
  CHECK(host == nullptr);  // device memory has no host address: NULL, not an error
  CHECK(sync == 1);
  CHECK(id == buffer_id(p));
  CHECK(managed == 0);
  CHECK(ordinal == 1);
  CHECK((start == p && size == 5000));
  CHECK(mapped == 1);
  CHECK(cuPointerGetAttributes(0, nullptr, nullptr, p) == CUDA_SUCCESS);  // nothing asked
}

TEST_CASE("GPUDirect RDMA 13.3 7.2: cuPointerGetAttributes rejects an unsupported attribute",
          "[cuda][pointer]") {
  world w;
  cuda_context();
  const CUdeviceptr p = cuda_alloc(k64);
  unsigned long long id = 12345;
  CUDA_POINTER_ATTRIBUTE_P2P_TOKENS t{};
  // P2P_TOKENS is cuPointerGetAttribute's alone: the multi-attribute call does not list it.
  CUpointer_attribute with_tokens[] = {CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                       CU_POINTER_ATTRIBUTE_P2P_TOKENS};
  void* data[] = {&id, &t};
  CHECK(cuPointerGetAttributes(2, with_tokens, data, p) == CUDA_ERROR_INVALID_VALUE);
  CHECK(id == 12345);          // nothing written
  CHECK(sync_memops(p) == 0);  // and no token side effect
  CUpointer_attribute bogus[] = {CU_POINTER_ATTRIBUTE_BUFFER_ID, CUpointer_attribute(999)};
  CHECK(cuPointerGetAttributes(2, bogus, data, p) == CUDA_ERROR_INVALID_VALUE);
  void* missing[] = {&id, nullptr};
  CUpointer_attribute two[] = {CU_POINTER_ATTRIBUTE_BUFFER_ID, CU_POINTER_ATTRIBUTE_IS_MANAGED};
  CHECK(cuPointerGetAttributes(2, two, missing, p) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuPointerGetAttributes(1, nullptr, data, p) == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("CUDA driver API: cuPointerGetAttributes gives defaults for memory CUDA does not know",
          "[cuda][pointer]") {
  world w;
  cuda_context();
  const CUdeviceptr freed = cuda_alloc(k64);
  REQUIRE(cuMemFree(freed) == CUDA_SUCCESS);
  int on_stack = 0;
  for (CUdeviceptr q : {CUdeviceptr(&on_stack), freed}) {
    CUcontext owner = CUcontext(&on_stack);
    unsigned int type = 9, managed = 9;
    unsigned long long id = 9;
    int ordinal = 9;
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                   CU_POINTER_ATTRIBUTE_BUFFER_ID, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    void* data[] = {&owner, &type, &id, &managed, &ordinal};
    // Unlike cuPointerGetAttribute this is no error: it is how host memory is recognized.
    CHECK(cuPointerGetAttributes(5, attrs, data, q) == CUDA_SUCCESS);
    CHECK(owner == nullptr);
    CHECK(type == 0);
    CHECK(id == 0);
    CHECK(managed == 0);
    CHECK(ordinal == CU_DEVICE_INVALID);
  }
}
