// Memory copies through the CUDA API model: data lands where the driver's VA -> VRAM mapping
// says, bounds are checked against live allocations, and copies owe the synchronization the
// guide describes (GPUDirect RDMA 13.3, 5.7 Synchronization and Memory Ordering, 7.1 UVA).
#include <algorithm>

#include "tests/conformance/cuda_helpers.h"

using namespace p2psim;
using namespace p2psim::test;

namespace {
std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(seed + i * 7 + i / 251);
  return v;
}
}  // namespace

TEST_CASE("CUDA driver API: HtoD then DtoH round-trips across GPU pages", "[cuda][memcpy]") {
  world w;
  cuda_context();
  const size_t n = 5 * k64 - 1000;
  const CUdeviceptr p = cuda_alloc(n);
  const auto in = pattern(n, 3);
  REQUIRE(cuMemcpyHtoD(p, in.data(), n) == CUDA_SUCCESS);
  std::vector<uint8_t> out(n);
  REQUIRE(cuMemcpyDtoH(out.data(), p, n) == CUDA_SUCCESS);
  CHECK(out == in);
  std::vector<uint8_t> part(1000);  // a piece straddling a page boundary
  REQUIRE(cuMemcpyDtoH(part.data(), p + k64 - 500, 1000) == CUDA_SUCCESS);
  CHECK(std::equal(part.begin(), part.end(), in.begin() + k64 - 500));
}

TEST_CASE("GPUDirect RDMA 13.3 7.1: copies follow the VA to VRAM page mapping", "[cuda][memcpy]") {
  world w;
  cuda_context();
  // Leave a hole in VRAM so that the next allocation's pages are not adjacent there.
  const CUdeviceptr a = cuda_alloc(k64), b = cuda_alloc(k64);
  REQUIRE(cuMemFree(a) == CUDA_SUCCESS);
  const CUdeviceptr c = cuda_alloc(3 * k64);
  auto vram = [&](CUdeviceptr va) { return w.driver().vram_of(w.pid(), va)->second; };
  REQUIRE(vram(c + k64) != vram(c) + k64);
  const auto bin = pattern(k64, 99), cin = pattern(3 * k64, 5);
  REQUIRE(cuMemcpyHtoD(b, bin.data(), k64) == CUDA_SUCCESS);
  recording_executor rec;
  {
    executor_scope scope(rec);
    REQUIRE(cuMemcpyHtoD(c, cin.data(), 3 * k64) == CUDA_SUCCESS);
  }
  // Each byte is in VRAM where the driver maps its VA.
  for (uint64_t off : {uint64_t(0), k64 - 1, k64, 2 * k64 + 77, 3 * k64 - 1}) {
    uint8_t byte = 0;
    w.vram(0).read(vram(c + off), {&byte, 1});
    CHECK(byte == cin[off]);
  }
  std::vector<uint8_t> bout(k64);
  REQUIRE(cuMemcpyDtoH(bout.data(), b, k64) == CUDA_SUCCESS);
  CHECK(bout == bin);  // the neighbour's page was not overwritten
  REQUIRE(rec.copies.size() == 1);
  const auto& r = rec.copies[0];
  CHECK(r.dst_gpu == 0);
  CHECK(r.src_gpu == -1);
  CHECK(r.segments.size() == 2);  // page 0 alone, then pages 1-2 adjacent in VRAM
  uint64_t total = 0;
  for (const auto& s : r.segments) total += s.bytes;
  CHECK(total == 3 * k64);
}

TEST_CASE("CUDA driver API: cuMemcpyDtoD copies within and between GPUs", "[cuda][memcpy]") {
  world w(gpus(2));
  CUcontext c0 = cuda_context(0);
  const CUdeviceptr src = cuda_alloc(2 * k64 + 10);
  cuda_context(1);
  const CUdeviceptr dst = cuda_alloc(2 * k64 + 10);
  REQUIRE(cuCtxSetCurrent(c0) == CUDA_SUCCESS);
  const auto in = pattern(2 * k64 + 10, 42);
  REQUIRE(cuMemcpyHtoD(src, in.data(), in.size()) == CUDA_SUCCESS);
  recording_executor rec;
  executor_scope scope(rec);
  REQUIRE(cuMemcpyDtoD(dst, src, in.size()) == CUDA_SUCCESS);
  REQUIRE(rec.copies.size() == 1);
  CHECK(rec.copies[0].src_gpu == 0);
  CHECK(rec.copies[0].dst_gpu == 1);
  std::vector<uint8_t> out(in.size());
  REQUIRE(cuMemcpyDtoH(out.data(), dst, out.size()) == CUDA_SUCCESS);
  CHECK(out == in);
  REQUIRE(cuMemcpyDtoD(src + 100, src + 5000, 64) == CUDA_SUCCESS);  // within one buffer
  REQUIRE(cuMemcpyDtoH(out.data(), src + 100, 64) == CUDA_SUCCESS);
  CHECK(std::equal(out.begin(), out.begin() + 64, in.begin() + 5000));
}

TEST_CASE("CUDA driver API: copies outside a live allocation give CUDA_ERROR_INVALID_VALUE",
          "[cuda][memcpy]") {
  world w;
  cuda_context();
  const CUdeviceptr p = cuda_alloc(4096), freed = cuda_alloc(k64);
  REQUIRE(cuMemFree(freed) == CUDA_SUCCESS);
  std::vector<uint8_t> buf(8192);
  int on_stack = 0;
  const CUresult bad = CUDA_ERROR_INVALID_VALUE;
  CHECK(cuMemcpyHtoD(p, buf.data(), 4097) == bad);  // past the end (its VRAM page is not)
  CHECK(cuMemcpyHtoD(p + 4000, buf.data(), 200) == bad);
  CHECK(cuMemcpyHtoD(freed, buf.data(), 16) == bad);
  CHECK(cuMemcpyDtoH(buf.data(), CUdeviceptr(&on_stack), 4) == bad);  // a host pointer
  CHECK(cuMemcpyDtoD(freed, p, 16) == bad);
  CHECK(cuMemcpyDtoD(p, freed, 16) == bad);
  CHECK(cuMemcpyHtoD(p, nullptr, 16) == bad);
  CHECK(cuMemcpyDtoH(nullptr, p, 16) == bad);
  CHECK(cuMemcpyHtoDAsync(p, buf.data(), 4097, nullptr) == bad);
  CHECK(cuMemcpyHtoD(p, buf.data(), 0) == CUDA_SUCCESS);  // nothing to copy
  CHECK(cuMemcpyHtoD(p, buf.data(), 4096) == CUDA_SUCCESS);
  REQUIRE(cuCtxSetCurrent(nullptr) == CUDA_SUCCESS);
  CHECK(cuMemcpyHtoD(p, buf.data(), 16) == CUDA_ERROR_INVALID_CONTEXT);
}

TEST_CASE("CUDA driver API: async copies go to a stream and complete by cuStreamSynchronize",
          "[cuda][memcpy]") {
  world w;
  CUcontext ctx = cuda_context();
  const CUdeviceptr p = cuda_alloc(k64);
  recording_executor rec;
  executor_scope scope(rec);
  CUstream s = nullptr;
  REQUIRE(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  const auto in = pattern(1000, 1);
  REQUIRE(cuMemcpyHtoDAsync(p, in.data(), in.size(), s) == CUDA_SUCCESS);
  REQUIRE(rec.copies.size() == 1);
  CHECK(rec.copies[0].async);
  CHECK(rec.copies[0].stream == s);
  CHECK(rec.copies[0].ctx == ctx);
  REQUIRE(cuStreamSynchronize(s) == CUDA_SUCCESS);
  REQUIRE(rec.syncs.size() == 1);
  CHECK((rec.syncs[0].stream == s && !rec.syncs[0].whole_context));
  std::vector<uint8_t> out(in.size());
  REQUIRE(cuMemcpyDtoHAsync(out.data(), p, out.size(), nullptr) == CUDA_SUCCESS);
  REQUIRE(cuStreamSynchronize(nullptr) == CUDA_SUCCESS);  // the NULL stream
  REQUIRE(cuCtxSynchronize() == CUDA_SUCCESS);
  CHECK((rec.syncs.back().ctx == ctx && rec.syncs.back().whole_context));
  CHECK(out == in);
  CHECK(cuMemcpyDtoDAsync(p, p + 2000, 100, CUstream(&out)) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(cuStreamCreate(&s, 2) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE(cuStreamDestroy(s) == CUDA_SUCCESS);
  CHECK(cuStreamSynchronize(s) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(cuMemcpyHtoDAsync(p, in.data(), 10, s) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(cuStreamDestroy(s) == CUDA_ERROR_INVALID_HANDLE);
  REQUIRE(cuCtxSetCurrent(nullptr) == CUDA_SUCCESS);
  CHECK(cuStreamSynchronize(nullptr) == CUDA_ERROR_INVALID_CONTEXT);
  CHECK(cuCtxSynchronize() == CUDA_ERROR_INVALID_CONTEXT);
}

TEST_CASE("GPUDirect RDMA 13.3 5.7: synchronous copies on SYNC_MEMOPS memory complete on return",
          "[cuda][memcpy]") {
  world w;
  cuda_context();
  const CUdeviceptr plain = cuda_alloc(k64), registered = cuda_alloc(k64);
  unsigned int flag = 1;
  REQUIRE(cuPointerSetAttribute(&flag, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, registered) ==
          CUDA_SUCCESS);
  recording_executor rec;
  executor_scope scope(rec);
  std::vector<uint8_t> buf(256);
  auto last = [&] { return rec.copies.back(); };
  // The guide's example: cuMemcpyDtoD normally returns before the copy is done ...
  REQUIRE(cuMemcpyDtoD(plain + 256, plain, 256) == CUDA_SUCCESS);
  CHECK_FALSE(last().complete_on_return);
  // ... but not when its destination is registered for a BAR1 reader.
  REQUIRE(cuMemcpyDtoD(registered, plain, 256) == CUDA_SUCCESS);
  CHECK(last().dst_sync_memops);
  CHECK(last().complete_on_return);
  REQUIRE(cuMemcpyDtoD(plain, registered, 256) == CUDA_SUCCESS);  // or its source
  CHECK(last().src_sync_memops);
  CHECK(last().complete_on_return);
  REQUIRE(cuMemcpyHtoD(plain, buf.data(), 256) == CUDA_SUCCESS);  // HtoD from pageable memory
  CHECK_FALSE(last().complete_on_return);
  REQUIRE(cuMemcpyHtoD(registered, buf.data(), 256) == CUDA_SUCCESS);
  CHECK(last().complete_on_return);
  REQUIRE(cuMemcpyDtoDAsync(registered, plain, 256, nullptr) == CUDA_SUCCESS);
  CHECK_FALSE(last().complete_on_return);  // only synchronous operations are upgraded
  REQUIRE(cuMemcpyDtoH(buf.data(), plain, 256) == CUDA_SUCCESS);
  CHECK(last().complete_on_return);  // into host memory: always done on return
  tokens(plain);                     // the legacy path registers too
  REQUIRE(cuMemcpyHtoD(plain, buf.data(), 256) == CUDA_SUCCESS);
  CHECK(last().complete_on_return);
  cuda_context(0, CU_CTX_SYNC_MEMOPS);  // a context whose every synchronous copy syncs
  const CUdeviceptr other = cuda_alloc(k64);
  REQUIRE(cuMemcpyHtoD(other, buf.data(), 256) == CUDA_SUCCESS);
  CHECK(last().ctx_sync_memops);
  CHECK(last().complete_on_return);
}

TEST_CASE("CUDA driver API: synchronizing calls wait for the executor", "[cuda][memcpy]") {
  world w;
  CUcontext ctx = cuda_context();
  const CUdeviceptr p = cuda_alloc(k64), q = cuda_alloc(k64);
  recording_executor rec;
  executor_scope scope(rec);
  unsigned int flag = 1;
  size_t before = rec.syncs.size();
  REQUIRE(cuPointerSetAttribute(&flag, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p) == CUDA_SUCCESS);
  CHECK(rec.syncs.size() == before + 1);  // 7.2: "CUDA synchronizing behavior"
  tokens(q);
  CHECK(rec.syncs.size() == before + 2);
  REQUIRE(cuMemFree(q) == CUDA_SUCCESS);
  CHECK(rec.syncs.size() == before + 3);
  REQUIRE(cuCtxDestroy(ctx) == CUDA_SUCCESS);
  CHECK(rec.syncs.size() == before + 4);
  for (const auto& s : rec.syncs) CHECK((s.ctx == ctx && s.whole_context && s.pid == w.pid()));
}
