// What kernels see of GPUDirect RDMA writes and the CUDA calls that change it: guide 5.7
// (CPU-initiated work submission and synchronization order RDMA writes for kernels), and the
// CUDA Driver API reference for CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING,
// CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS and cuFlushGPUDirectRDMAWrites
// (returns CUDA_SUCCESS, NOT_INITIALIZED, INVALID_CONTEXT, INVALID_VALUE; a no-op for a scope
// within the device's ordering). Writes land through the GPU's rdma_visibility model, as the
// GPU model's BAR1 path does; a scripted choice source makes every pending sector "not yet".
#include <vector>

#include "models/pcie/choices.h"
#include "tests/conformance/cuda_helpers.h"

using namespace p2psim;
using namespace p2psim::test;
using gpu::consumer;
using gpu::writes_ordering;

namespace {

// Every kernel read of a pending sector: not yet visible.
struct never_visible {
  world& w;
  pcie::replay_choices choices{std::vector<size_t>(64, 1)};
  explicit never_visible(world& in) : w(in) { set(&choices); }
  ~never_visible() { set(nullptr); }
  void set(pcie::choice_source* c) {
    for (int g = 0; g < w.driver().gpu_count(); ++g)
      if (gpu::rdma_visibility* v = w.visibility(g)) v->set_choices(c);
  }
};

world_config ordered(writes_ordering o, int n = 1) {
  world_config c = gpus(n);
  c.gpu.rdma_ordering = o;
  return c;
}

uint64_t vram_offset(world& w, CUdeviceptr p) {
  return w.driver().vram_of(w.pid(), p)->second;
}

// A third-party device's write through BAR1 onto `p`, which lives on `gpu`.
void rdma_write(world& w, int gpu, CUdeviceptr p, uint8_t value, size_t n = 64) {
  const std::vector<uint8_t> d(n, value);
  w.visibility(gpu)->landing(vram_offset(w, p), d);
  w.vram(gpu).write(vram_offset(w, p), d);
}

// Whether a kernel of consumer `c` reads `value` at `p` (n bytes).
bool kernel_sees(world& w, int gpu, CUdeviceptr p, uint8_t value, consumer c, size_t n = 64) {
  std::vector<uint8_t> out(n);
  w.visibility(gpu)->kernel_read(vram_offset(w, p), out, c);
  return out == std::vector<uint8_t>(n, value);
}

}  // namespace

TEST_CASE("CUDA driver API: cuFlushGPUDirectRDMAWrites has the real enum values",
          "[cuda][rdma_ordering]") {
  CHECK(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX == 0);
  CHECK(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER == 100);
  CHECK(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES == 200);
  CHECK(CU_GPU_DIRECT_RDMA_WRITES_ORDERING_NONE == 0);
  CHECK(CU_GPU_DIRECT_RDMA_WRITES_ORDERING_ALL_DEVICES == 200);
  CHECK(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST == 1);
  CHECK(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS == 117);
  // The model's ordering and scope values are the attribute's.
  CHECK(int(writes_ordering::owner) == CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER);
  CHECK(int(writes_ordering::all_devices) == CU_GPU_DIRECT_RDMA_WRITES_ORDERING_ALL_DEVICES);
}

TEST_CASE(
    "CUDA driver API: cuFlushGPUDirectRDMAWrites before cuInit returns "
    "CUDA_ERROR_NOT_INITIALIZED",
    "[cuda][rdma_ordering]") {
  CHECK(cuFlushGPUDirectRDMAWrites(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
                                   CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER) ==
        CUDA_ERROR_NOT_INITIALIZED);  // no driver at all
  world w;
  CHECK(cuFlushGPUDirectRDMAWrites(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
                                   CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER) ==
        CUDA_ERROR_NOT_INITIALIZED);
}

TEST_CASE(
    "CUDA driver API: cuFlushGPUDirectRDMAWrites without a current context returns "
    "CUDA_ERROR_INVALID_CONTEXT",
    "[cuda][rdma_ordering]") {
  world w;
  REQUIRE(cuInit(0) == CUDA_SUCCESS);
  const auto flush = [] {
    return cuFlushGPUDirectRDMAWrites(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
                                      CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES);
  };
  CHECK(flush() == CUDA_ERROR_INVALID_CONTEXT);
  CUcontext c = cuda_context();
  CHECK(flush() == CUDA_SUCCESS);
  REQUIRE(cuCtxDestroy(c) == CUDA_SUCCESS);
  CHECK(flush() == CUDA_ERROR_INVALID_CONTEXT);
}

TEST_CASE(
    "CUDA driver API: cuFlushGPUDirectRDMAWrites with an unknown target or scope returns "
    "CUDA_ERROR_INVALID_VALUE",
    "[cuda][rdma_ordering]") {
  world w(ordered(writes_ordering::none));
  cuda_context();
  const CUdeviceptr p = cuda_alloc(k64);
  rdma_write(w, 0, p, 5);
  const auto target = CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX;
  CHECK(cuFlushGPUDirectRDMAWrites(CUflushGPUDirectRDMAWritesTarget(1),
                                   CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER) ==
        CUDA_ERROR_INVALID_VALUE);
  // ORDERING_NONE (0) is an attribute value, not a scope.
  CHECK(cuFlushGPUDirectRDMAWrites(target, CUflushGPUDirectRDMAWritesScope(0)) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(cuFlushGPUDirectRDMAWrites(target, CUflushGPUDirectRDMAWritesScope(150)) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(w.visibility(0)->pending() == 2);  // refused calls flushed nothing
  CHECK(w.visibility(0)->stats().flushes == 0);
}

TEST_CASE("CUDA driver API: GPU_DIRECT_RDMA_WRITES_ORDERING is the GPU's configured ordering",
          "[cuda][rdma_ordering]") {
  world_config c = gpus(4);
  c.each = {c.gpu, c.gpu, c.gpu, c.gpu};
  c.each[0].rdma_ordering = writes_ordering::none;
  c.each[1].rdma_ordering = writes_ordering::owner;
  c.each[2].rdma_ordering = writes_ordering::all_devices;
  c.each[3].rdma_ordering = std::nullopt;  // no visibility model
  world w(c);
  REQUIRE(cuInit(0) == CUDA_SUCCESS);
  auto attr = [](CUdevice_attribute a, CUdevice dev) {
    int v = -1;
    REQUIRE(cuDeviceGetAttribute(&v, a, dev) == CUDA_SUCCESS);
    return v;
  };
  const auto ordering = CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING;
  CHECK(attr(ordering, 0) == CU_GPU_DIRECT_RDMA_WRITES_ORDERING_NONE);
  CHECK(attr(ordering, 1) == CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER);
  CHECK(attr(ordering, 2) == CU_GPU_DIRECT_RDMA_WRITES_ORDERING_ALL_DEVICES);
  CHECK(attr(ordering, 3) == CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER);
  // The flush API is there on every GPU ("users may query support for this API" here).
  for (CUdevice d = 0; d < 4; ++d)
    CHECK((attr(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS, d) &
           CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST) != 0);
  // Without a visibility model a flush succeeds and does nothing.
  CUcontext ctx = nullptr;
  REQUIRE(cuCtxCreate(&ctx, 0, 3) == CUDA_SUCCESS);
  CHECK(cuFlushGPUDirectRDMAWrites(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
                                   CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES) == CUDA_SUCCESS);
}

TEST_CASE(
    "GPUDirect RDMA 13.3 5.7: a kernel may see stale data where BAR1 and copies see the "
    "write",
    "[cuda][rdma_ordering]") {
  world w(ordered(writes_ordering::none));
  cuda_context();
  const CUdeviceptr p = cuda_alloc(k64);
  never_visible hidden(w);
  rdma_write(w, 0, p, 7);
  CHECK_FALSE(kernel_sees(w, 0, p, 7, consumer::owner));  // a concurrently running kernel
  CHECK(kernel_sees(w, 0, p, 0, consumer::owner));        // sees the old bytes
  CHECK(w.visibility(0)->stats().stale_reads == 2);       // both reads
  // "reading back the written data either through GPU BAR or a CUDA memory copy operation,
  // will return the newly written data"
  std::vector<uint8_t> back(64);
  w.vram(0).read(vram_offset(w, p), back);  // what a BAR1 read returns
  CHECK(back == std::vector<uint8_t>(64, 7));
  std::vector<uint8_t> copied(64);
  REQUIRE(cuMemcpyDtoH(copied.data(), p, copied.size()) == CUDA_SUCCESS);
  CHECK(copied == std::vector<uint8_t>(64, 7));
}

TEST_CASE(
    "GPUDirect RDMA 13.3 5.7: CPU-initiated CUDA synchronization and work submission make "
    "landed writes visible to kernels",
    "[cuda][rdma_ordering]") {
  world w(ordered(writes_ordering::none));
  cuda_context();
  const CUdeviceptr p = cuda_alloc(k64), q = cuda_alloc(k64);
  CUstream s = nullptr;
  REQUIRE(cuStreamCreate(&s, 0) == CUDA_SUCCESS);
  never_visible hidden(w);
  rdma_write(w, 0, p, 3);
  REQUIRE_FALSE(kernel_sees(w, 0, p, 3, consumer::owner));
  REQUIRE_FALSE(kernel_sees(w, 0, p, 3, consumer::peer));
  std::vector<uint8_t> host(16, 1);
  SECTION("cuCtxSynchronize") {
    REQUIRE(cuCtxSynchronize() == CUDA_SUCCESS);
  }
  SECTION("cuStreamSynchronize") {
    REQUIRE(cuStreamSynchronize(s) == CUDA_SUCCESS);
  }
  SECTION("cuMemcpyHtoD elsewhere") {
    REQUIRE(cuMemcpyHtoD(q, host.data(), host.size()) == CUDA_SUCCESS);
  }
  SECTION("cuMemcpyDtoHAsync") {
    REQUIRE(cuMemcpyDtoHAsync(host.data(), q, host.size(), s) == CUDA_SUCCESS);
  }
  SECTION("cuMemcpyDtoDAsync") {
    REQUIRE(cuMemcpyDtoDAsync(q, q + 64, 64, nullptr) == CUDA_SUCCESS);
  }
  CHECK(kernel_sees(w, 0, p, 3, consumer::owner));
  CHECK(kernel_sees(w, 0, p, 3, consumer::peer));
  CHECK(w.visibility(0)->pending() == 0);
  CHECK(w.visibility(0)->stats().syncs == 1);
  // Only what had landed: a write after the call is pending again.
  rdma_write(w, 0, p, 4);
  CHECK_FALSE(kernel_sees(w, 0, p, 4, consumer::owner));
}

TEST_CASE("GPUDirect RDMA 13.3 5.7: a copy between two GPUs orders RDMA writes on both",
          "[cuda][rdma_ordering]") {
  world w(ordered(writes_ordering::none, 3));
  cuda_context(0);
  const CUdeviceptr a = cuda_alloc(k64);
  cuda_context(1);
  const CUdeviceptr b = cuda_alloc(k64);
  cuda_context(2);  // current: a third GPU's context issues the copy
  never_visible hidden(w);
  rdma_write(w, 0, a, 1);
  rdma_write(w, 1, b, 2);
  REQUIRE(cuMemcpyDtoD(a + 128, b + 128, 64) == CUDA_SUCCESS);
  CHECK(kernel_sees(w, 0, a, 1, consumer::owner));
  CHECK(kernel_sees(w, 1, b, 2, consumer::owner));
  CHECK(w.visibility(2)->stats().syncs == 1);  // and the issuing context's GPU
  // A call that fails submits nothing.
  rdma_write(w, 0, a, 9);
  CHECK(cuMemcpyDtoD(a, b + k64, 64) == CUDA_ERROR_INVALID_VALUE);
  CHECK(w.visibility(0)->pending() == 2);
}

TEST_CASE("CUDA driver API: cuFlushGPUDirectRDMAWrites makes landed writes visible to its scope",
          "[cuda][rdma_ordering]") {
  const auto target = CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX;
  SECTION("ordering NONE: TO_OWNER for the owner's kernels and TO_ALL_DEVICES for all") {
    world w(ordered(writes_ordering::none));
    cuda_context();
    const CUdeviceptr p = cuda_alloc(k64);
    never_visible hidden(w);
    rdma_write(w, 0, p, 6);
    REQUIRE(cuFlushGPUDirectRDMAWrites(target, CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER) ==
            CUDA_SUCCESS);
    CHECK(kernel_sees(w, 0, p, 6, consumer::owner));
    CHECK_FALSE(kernel_sees(w, 0, p, 6, consumer::peer));
    REQUIRE(cuFlushGPUDirectRDMAWrites(target, CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES) ==
            CUDA_SUCCESS);
    CHECK(kernel_sees(w, 0, p, 6, consumer::peer));
    CHECK(w.visibility(0)->pending() == 0);
    CHECK(w.visibility(0)->stats().syncs == 0);  // a flush is not a synchronization
  }
  SECTION("ordering OWNER: the owner needs no flush and TO_OWNER is a no-op") {
    world w(ordered(writes_ordering::owner));
    cuda_context();
    const CUdeviceptr p = cuda_alloc(k64);
    never_visible hidden(w);
    rdma_write(w, 0, p, 6);
    CHECK(kernel_sees(w, 0, p, 6, consumer::owner));
    REQUIRE(cuFlushGPUDirectRDMAWrites(target, CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER) ==
            CUDA_SUCCESS);
    CHECK(w.visibility(0)->pending() == 2);  // still pending for other GPUs' kernels
    CHECK_FALSE(kernel_sees(w, 0, p, 6, consumer::peer));
    REQUIRE(cuFlushGPUDirectRDMAWrites(target, CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES) ==
            CUDA_SUCCESS);
    CHECK(kernel_sees(w, 0, p, 6, consumer::peer));
  }
  SECTION("ordering ALL_DEVICES: nothing to flush") {
    world w(ordered(writes_ordering::all_devices));
    cuda_context();
    const CUdeviceptr p = cuda_alloc(k64);
    never_visible hidden(w);
    rdma_write(w, 0, p, 6);
    CHECK(w.visibility(0)->pending() == 0);
    CHECK(kernel_sees(w, 0, p, 6, consumer::peer));
    CHECK(cuFlushGPUDirectRDMAWrites(target, CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES) ==
          CUDA_SUCCESS);
  }
  SECTION("the flush acts on the current context's GPU") {
    world w(ordered(writes_ordering::none, 2));
    cuda_context(0);
    const CUdeviceptr a = cuda_alloc(k64);
    cuda_context(1);
    const CUdeviceptr b = cuda_alloc(k64);
    never_visible hidden(w);
    rdma_write(w, 0, a, 1);
    rdma_write(w, 1, b, 2);
    REQUIRE(cuFlushGPUDirectRDMAWrites(target, CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES) ==
            CUDA_SUCCESS);
    CHECK(kernel_sees(w, 1, b, 2, consumer::owner));
    CHECK_FALSE(kernel_sees(w, 0, a, 1, consumer::owner));
  }
}
