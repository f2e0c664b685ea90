// The CUDA driver API model: initialization, devices, contexts and cuMemAlloc memory
// (GPUDirect RDMA 13.3, 4.1.2, 5.3, 5.6, 7.1; CUDA Driver API reference for return codes).
#include <cstdint>
#include <cstring>
#include <string>

#include "tests/conformance/cuda_helpers.h"

using namespace p2psim;
using namespace p2psim::test;

TEST_CASE("CUDA driver API: cuda.h has the real numeric values", "[cuda]") {
  CHECK(CUDA_ERROR_NOT_INITIALIZED == 3);
  CHECK(CUDA_ERROR_INVALID_DEVICE == 101);
  CHECK(CUDA_ERROR_INVALID_CONTEXT == 201);
  CHECK(CUDA_ERROR_NOT_FOUND == 500);
  CHECK(CUDA_ERROR_NOT_SUPPORTED == 801);
  CHECK(CU_POINTER_ATTRIBUTE_P2P_TOKENS == 5);
  CHECK(CU_POINTER_ATTRIBUTE_SYNC_MEMOPS == 6);
  CHECK(CU_POINTER_ATTRIBUTE_BUFFER_ID == 7);
  CHECK(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL == 9);
  CHECK(CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE == 15);
  CHECK(CU_MEMORYTYPE_DEVICE == 2);
  CHECK(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED == 116);
  CHECK(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING == 118);
  CHECK(CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER == 100);
  CHECK(CU_CTX_SYNC_MEMOPS == 0x80);
  CHECK(sizeof(CUdeviceptr) == 8);
  const char* name = nullptr;
  CHECK(cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &name) == CUDA_SUCCESS);
  CHECK(std::string(name) == "CUDA_ERROR_INVALID_VALUE");
}

TEST_CASE("CUDA driver API: calls before cuInit return CUDA_ERROR_NOT_INITIALIZED", "[cuda]") {
  world w;
  int n = 0;
  CUdevice d = 0;
  CUcontext c = nullptr;
  CUstream s = nullptr;
  CUdeviceptr p = 0;
  size_t bytes = 0;
  unsigned long long id = 0;
  unsigned int flag = 1;
  char buf[16] = {};
  CUpointer_attribute attr = CU_POINTER_ATTRIBUTE_BUFFER_ID;
  void* data[] = {&id};
  const CUresult no = CUDA_ERROR_NOT_INITIALIZED;
  CHECK(cuDeviceGetCount(&n) == no);
  CHECK(cuDeviceGet(&d, 0) == no);
  CHECK(cuDeviceGetAttribute(&n, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, 0) == no);
  CHECK(cuCtxCreate(&c, 0, 0) == no);
  CHECK(cuCtxGetCurrent(&c) == no);
  CHECK(cuCtxSetCurrent(nullptr) == no);
  CHECK(cuCtxSynchronize() == no);
  CHECK(cuMemAlloc(&p, 4096) == no);
  CHECK(cuMemFree(nv::uva_base) == no);
  CHECK(cuMemGetAddressRange(&p, &bytes, nv::uva_base) == no);
  CHECK(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, nv::uva_base) == no);
  CHECK(cuPointerGetAttributes(1, &attr, data, nv::uva_base) == no);
  CHECK(cuPointerSetAttribute(&flag, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, nv::uva_base) == no);
  CHECK(cuMemcpyHtoD(nv::uva_base, buf, sizeof buf) == no);
  CHECK(cuMemcpyDtoH(buf, nv::uva_base, sizeof buf) == no);
  CHECK(cuStreamCreate(&s, 0) == no);
  CHECK(cuStreamSynchronize(nullptr) == no);
  // The version query is the one call that needs no cuInit.
  int version = 0;
  CHECK(cuDriverGetVersion(&version) == CUDA_SUCCESS);
  CHECK(version >= 12020);
}

TEST_CASE("CUDA driver API: cuInit takes flags 0 and needs a GPU", "[cuda]") {
  CHECK(cuInit(0) == CUDA_ERROR_NO_DEVICE);  // no NVIDIA driver installed at all
  {
    world none(gpus(0));
    CHECK(cuInit(0) == CUDA_ERROR_NO_DEVICE);
  }
  world w;
  CHECK(cuInit(1) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuInit(0) == CUDA_SUCCESS);
  CHECK(cuInit(0) == CUDA_SUCCESS);  // again: harmless
}

TEST_CASE("CUDA driver API: a bad device ordinal gives CUDA_ERROR_INVALID_DEVICE", "[cuda]") {
  world w(gpus(2));
  REQUIRE(cuInit(0) == CUDA_SUCCESS);
  int n = 0;
  CHECK(cuDeviceGetCount(&n) == CUDA_SUCCESS);
  CHECK(n == 2);
  CUdevice d = -1;
  CHECK(cuDeviceGet(&d, 1) == CUDA_SUCCESS);
  CHECK(d == 1);
  CUcontext c = nullptr;
  size_t bytes = 0;
  char name[8];
  CUuuid uuid;
  for (int bad : {2, -1, 1000}) {
    CHECK(cuDeviceGet(&d, bad) == CUDA_ERROR_INVALID_DEVICE);
    CHECK(cuDeviceGetAttribute(&n, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, bad) ==
          CUDA_ERROR_INVALID_DEVICE);
    CHECK(cuCtxCreate(&c, 0, bad) == CUDA_ERROR_INVALID_DEVICE);
    CHECK(cuDeviceTotalMem(&bytes, bad) == CUDA_ERROR_INVALID_DEVICE);
    CHECK(cuDeviceGetName(name, sizeof name, bad) == CUDA_ERROR_INVALID_DEVICE);
    CHECK(cuDeviceGetUuid(&uuid, bad) == CUDA_ERROR_INVALID_DEVICE);
  }
}

TEST_CASE("GPUDirect RDMA 13.3 4.1.2: device attributes report GPUDirect RDMA support", "[cuda]") {
  world w(gpus(2));
  REQUIRE(cuInit(0) == CUDA_SUCCESS);
  auto attr = [](CUdevice_attribute a, CUdevice dev = 0) {
    int v = -1;
    REQUIRE(cuDeviceGetAttribute(&v, a, dev) == CUDA_SUCCESS);
    return v;
  };
  CHECK(attr(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED) == 1);
  CHECK(attr(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, 1) == 1);
  CHECK(attr(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS) ==
        CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST);  // cuFlushGPUDirectRDMAWrites
  CHECK(attr(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING) ==
        CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER);
  CHECK(attr(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING) == 1);  // UVA (7.1)
  CHECK(attr(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY) == 0);
  CHECK(attr(CU_DEVICE_ATTRIBUTE_INTEGRATED) == 0);
  int v = 0;
  CHECK(cuDeviceGetAttribute(&v, CUdevice_attribute(1), 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuDeviceGetAttribute(nullptr, CU_DEVICE_ATTRIBUTE_INTEGRATED, 0) ==
        CUDA_ERROR_INVALID_VALUE);
  // The identity a third-party driver compares with nvidia_p2p_page_table.gpu_uuid.
  CUuuid uuid;
  REQUIRE(cuDeviceGetUuid(&uuid, 1) == CUDA_SUCCESS);
  CHECK(std::memcmp(uuid.bytes, w.gpu(1).uuid.data(), 16) == 0);
  size_t bytes = 0;
  CHECK(cuDeviceTotalMem(&bytes, 0) == CUDA_SUCCESS);
  CHECK(bytes == w.vram(0).capacity());
  char name[4];
  CHECK(cuDeviceGetName(name, sizeof name, 1) == CUDA_SUCCESS);
  CHECK(std::string(name) == "gpu");  // truncated to the buffer, NUL-terminated
}

TEST_CASE("CUDA driver API: contexts and the current context belong to one process", "[cuda]") {
  world w(gpus(2));
  CUcontext a = cuda_context(0), cur = nullptr;
  CHECK((cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == a));  // a new context is current
  CUcontext b = cuda_context(1);
  CHECK((cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == b));
  CHECK(cuCtxSetCurrent(a) == CUDA_SUCCESS);  // replaces b at the top of the stack [a, b]
  CHECK((cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == a));
  CHECK(cuCtxSetCurrent(nullptr) == CUDA_SUCCESS);  // NULL pops: [a] (CUDA 13 on an H100)
  CHECK((cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == a));
  CHECK(cuCtxSetCurrent(nullptr) == CUDA_SUCCESS);
  CHECK((cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == nullptr));
  {
    kernel::as_process other(2);
    REQUIRE(cuInit(0) == CUDA_SUCCESS);
    CHECK((cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == nullptr));
    CHECK(cuCtxSetCurrent(a) == CUDA_ERROR_INVALID_CONTEXT);  // not its context
    CHECK(cuCtxDestroy(a) == CUDA_ERROR_INVALID_CONTEXT);
  }
  CHECK(cuCtxDestroy(b) == CUDA_SUCCESS);
  CHECK(cuCtxSetCurrent(b) == CUDA_ERROR_INVALID_CONTEXT);
  CHECK(cuCtxDestroy(b) == CUDA_ERROR_INVALID_CONTEXT);
  CHECK(cuCtxDestroy(nullptr) == CUDA_ERROR_INVALID_VALUE);
  // Destroying the current context leaves none current.
  CHECK(cuCtxSetCurrent(a) == CUDA_SUCCESS);
  CHECK(cuCtxDestroy(a) == CUDA_SUCCESS);
  CHECK((cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == nullptr));
  CUcontext c = nullptr;
  CHECK(cuCtxCreate(&c, 0x100, 0) == CUDA_ERROR_INVALID_VALUE);  // undefined flag
  CHECK(cuCtxCreate(&c, CU_CTX_SCHED_SPIN | CU_CTX_SCHED_YIELD, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuCtxCreate(&c, CU_CTX_SCHED_BLOCKING_SYNC | CU_CTX_SYNC_MEMOPS, 0) == CUDA_SUCCESS);
  CHECK(cuCtxCreate(nullptr, 0, 0) == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("CUDA driver API: each process has its own CUDA state and VA space", "[cuda]") {
  world w;
  cuda_context();
  const CUdeviceptr mine = cuda_alloc(k64);
  CUdeviceptr theirs = 0, second = 0;
  unsigned long long their_id = 0;
  {
    kernel::as_process other(2);
    CUdeviceptr p = 0;
    CHECK(cuMemAlloc(&p, k64) == CUDA_ERROR_NOT_INITIALIZED);  // process 1's cuInit is not its
    cuda_context();
    theirs = cuda_alloc(k64), second = cuda_alloc(k64);
    CHECK(theirs == mine);  // separate VA spaces: the same address is two buffers
    their_id = buffer_id(theirs);
  }
  CHECK(buffer_id(mine) != their_id);
  unsigned long long id = 0;
  CHECK(attribute(id, CU_POINTER_ATTRIBUTE_BUFFER_ID, second) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemFree(second) == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("CUDA driver API: a new driver instance starts with fresh CUDA state", "[cuda]") {
  {
    world first;
    cuda_context();
  }
  world second;
  int n = 0;
  CHECK(cuDeviceGetCount(&n) == CUDA_ERROR_NOT_INITIALIZED);
}

TEST_CASE("CUDA driver API: cuMemAlloc without a current context gives CUDA_ERROR_INVALID_CONTEXT",
          "[cuda]") {
  world w;
  REQUIRE(cuInit(0) == CUDA_SUCCESS);
  CUdeviceptr p = 0;
  CHECK(cuMemAlloc(&p, 4096) == CUDA_ERROR_INVALID_CONTEXT);
  cuda_context();
  REQUIRE(cuCtxSetCurrent(nullptr) == CUDA_SUCCESS);
  CHECK(cuMemAlloc(&p, 4096) == CUDA_ERROR_INVALID_CONTEXT);
}

TEST_CASE("CUDA driver API: cuMemAlloc of 0 bytes gives CUDA_ERROR_INVALID_VALUE", "[cuda]") {
  world w;
  cuda_context();
  CUdeviceptr p = 0;
  CHECK(cuMemAlloc(&p, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemAlloc(nullptr, 4096) == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("CUDA driver API: cuMemAlloc beyond VRAM gives CUDA_ERROR_OUT_OF_MEMORY", "[cuda]") {
  world w;  // 64 MiB of VRAM
  cuda_context();
  CUdeviceptr p = 0, q = 0;
  CHECK(cuMemAlloc(&p, (64 << 20) + 1) == CUDA_ERROR_OUT_OF_MEMORY);
  CHECK(cuMemAlloc(&p, SIZE_MAX) == CUDA_ERROR_OUT_OF_MEMORY);
  REQUIRE(cuMemAlloc(&p, 64 << 20) == CUDA_SUCCESS);  // all of it
  CHECK(cuMemAlloc(&q, 1) == CUDA_ERROR_OUT_OF_MEMORY);
  REQUIRE(cuMemFree(p) == CUDA_SUCCESS);
  CHECK(cuMemAlloc(&q, 1) == CUDA_SUCCESS);  // the VRAM came back
}

TEST_CASE("GPUDirect RDMA 13.3 7.1: device pointers lie in the 40-bit UVA range", "[cuda]") {
  world w;
  cuda_context();
  struct buf {
    CUdeviceptr p;
    size_t n;
  };
  std::vector<buf> bufs;
  for (size_t n : {1, 256, 4096, 65536, 100000, 1 << 20, 3 << 20})
    bufs.push_back({cuda_alloc(n), n});
  for (size_t i = 0; i < bufs.size(); ++i) {
    const auto [p, n] = bufs[i];
    CHECK(p != 0);
    CHECK(p + n <= (1ull << 40));
    CHECK(p % 512 == 0);  // driver 580 packs buffers 512 B apart (tests/data/cuda_probe) ...
    if (n > (2u << 20)) CHECK(p % (2u << 20) == 0);  // ... and gives big ones 2 MiB pages
    for (size_t j = 0; j < i; ++j)                   // and no two overlap
      CHECK((p + n <= bufs[j].p || bufs[j].p + bufs[j].n <= p));
  }
}

TEST_CASE("GPUDirect RDMA 13.3 5.6: a freed VA is reused on another device with other tokens",
          "[cuda]") {
  world w(gpus(2));
  CUcontext dev0 = cuda_context(0), dev1 = cuda_context(1);
  REQUIRE(cuCtxSetCurrent(dev0) == CUDA_SUCCESS);
  const CUdeviceptr ptr0 = cuda_alloc(1 << 20);
  const auto t0 = tokens(ptr0);
  REQUIRE(cuMemFree(ptr0) == CUDA_SUCCESS);
  // Each context takes VA from blocks of its own (seen on an H100): the VA comes free for
  // another context once dev0 is gone.
  REQUIRE(cuCtxDestroy(dev0) == CUDA_SUCCESS);
  REQUIRE(cuCtxSetCurrent(dev1) == CUDA_SUCCESS);
  const CUdeviceptr ptr1 = cuda_alloc(1 << 20);
  CHECK(ptr0 == ptr1);  // the guide's example: the driver reuses the VA ...
  const auto t1 = tokens(ptr0);
  CHECK(t1.vaSpaceToken != t0.vaSpaceToken);  // ... but the same address has other tokens
  int ordinal = -1;
  CHECK(attribute(ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr0) == CUDA_SUCCESS);
  CHECK(ordinal == 1);
}

TEST_CASE("GPUDirect RDMA 13.3 5.3: cuMemFree of a pinned buffer runs the free callback first",
          "[cuda]") {
  world w;
  cuda_context();
  const CUdeviceptr p = cuda_alloc(4 * k64);
  revocation r;
  REQUIRE(nvidia_p2p_get_pages(0, 0, p, 4 * k64, &r.table, revocation::callback, &r) == 0);
  CHECK(w.driver().bar1_used_bytes(0) == w.bar1(0).reserved() + 4 * k64);
  REQUIRE(cuMemFree(p) == CUDA_SUCCESS);
  CHECK(r.calls == 1);                                           // synchronously, inside cuMemFree
  CHECK(w.driver().bar1_used_bytes(0) == w.bar1(0).reserved());  // unmapped after it
  unsigned long long id = 0;
  CHECK(attribute(id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p) == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("GPUDirect RDMA 13.3 5.3: cuCtxDestroy frees the context's memory and revokes pins",
          "[cuda]") {
  world w;  // 64 MiB of VRAM
  CUcontext a = cuda_context(), b = cuda_context();
  REQUIRE(cuCtxSetCurrent(a) == CUDA_SUCCESS);
  const CUdeviceptr pa = cuda_alloc(32 << 20);
  revocation r;
  REQUIRE(nvidia_p2p_get_pages(0, 0, pa, k64, &r.table, revocation::callback, &r) == 0);
  REQUIRE(cuCtxSetCurrent(b) == CUDA_SUCCESS);
  const CUdeviceptr pb = cuda_alloc(4096);
  CUdeviceptr big = 0;
  CHECK(cuMemAlloc(&big, 62 << 20) == CUDA_ERROR_OUT_OF_MEMORY);
  REQUIRE(cuCtxDestroy(a) == CUDA_SUCCESS);
  CHECK(r.calls == 1);
  unsigned long long id = 0;
  CHECK(attribute(id, CU_POINTER_ATTRIBUTE_BUFFER_ID, pa) == CUDA_ERROR_INVALID_VALUE);
  CHECK(attribute(id, CU_POINTER_ATTRIBUTE_BUFFER_ID, pb) == CUDA_SUCCESS);  // b's stays
  CHECK(cuMemAlloc(&big, 62 << 20) == CUDA_SUCCESS);                         // a's VRAM came back
}
