// CUDA IPC (cuIpcGetMemHandle / cuIpcOpenMemHandle / cuIpcCloseMemHandle) between two processes
// as libcuda 580 answered on an H200 (tests/data/cuda_probe/h200_cuda13_ipc.txt; docs/
// driver-model.md, "CUDA IPC"): which pointers export, how opens and closes count, what the
// importer's pointer says of itself, and the bytes both processes see, checked in VRAM.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "tests/conformance/cuda_helpers.h"

using namespace p2psim;
using test::k64;

namespace {

constexpr kernel::pid_t exporter = 1, importer = 2;  // the world's process, and another
constexpr size_t MiB = 1 << 20;

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(i * 31 + seed + (i >> 10));
  return v;
}

void write(CUdeviceptr p, const std::vector<uint8_t>& bytes) {
  REQUIRE(cuMemcpyHtoD(p, bytes.data(), bytes.size()) == CUDA_SUCCESS);
}

std::vector<uint8_t> read(CUdeviceptr p, size_t n) {
  std::vector<uint8_t> v(n);
  REQUIRE(cuMemcpyDtoH(v.data(), p, n) == CUDA_SUCCESS);
  return v;
}

CUipcMemHandle handle_of(CUdeviceptr p) {
  CUipcMemHandle h;
  REQUIRE(cuIpcGetMemHandle(&h, p) == CUDA_SUCCESS);
  return h;
}

bool same(const CUipcMemHandle& a, const CUipcMemHandle& b) {
  return std::memcmp(a.reserved, b.reserved, sizeof a.reserved) == 0;
}

CUresult open(CUdeviceptr& p, const CUipcMemHandle& h, unsigned flags = 1) {
  return cuIpcOpenMemHandle(&p, h, flags);
}

}  // namespace

TEST_CASE(
    "CUDA IPC: cuIpcGetMemHandle exports live cuMemAlloc memory of the caller and nothing else "
    "(driver 580)",
    "[cuda][ipc]") {
  test::world w;
  CUipcMemHandle h;
  CHECK(cuIpcGetMemHandle(&h, 0) == CUDA_ERROR_INVALID_VALUE);  // before cuInit, NULL first
  CHECK(cuIpcGetMemHandle(&h, 0x7f0000001000) == CUDA_ERROR_NOT_INITIALIZED);
  REQUIRE(cuInit(0) == CUDA_SUCCESS);
  CHECK(cuIpcGetMemHandle(&h, 0x7f0000001000) == CUDA_ERROR_INVALID_CONTEXT);
  CUcontext x = nullptr;
  REQUIRE(cuCtxCreate(&x, 0, 0) == CUDA_SUCCESS);
  const CUdeviceptr a = test::cuda_alloc(2 * MiB), b = test::cuda_alloc(100);
  const CUipcMemHandle ha = handle_of(a);
  CHECK(same(handle_of(a), ha));         // again: the same bytes
  CHECK(same(handle_of(a + 4096), ha));  // an interior pointer's too
  CHECK(same(handle_of(a + 2 * MiB - 1), ha));
  CHECK_FALSE(same(handle_of(b), ha));
  std::memset(&h, 0xAB, sizeof h);
  CHECK(cuIpcGetMemHandle(&h, a + 2 * MiB) == CUDA_ERROR_INVALID_VALUE);  // one past the end
  CHECK(h.reserved[0] == char(0xAB));                                     // unwritten
  const CUdeviceptr f = test::cuda_alloc(2 * MiB);
  const CUipcMemHandle hf = handle_of(f);
  REQUIRE(cuMemFree(f) == CUDA_SUCCESS);
  CHECK(cuIpcGetMemHandle(&h, f) == CUDA_ERROR_INVALID_VALUE);  // freed
  const CUdeviceptr g = test::cuda_alloc(2 * MiB);
  CHECK(g == f);                        // F's VA again
  CHECK_FALSE(same(handle_of(g), hf));  // but another allocation
  void* host = nullptr;
  REQUIRE(cuMemHostAlloc(&host, k64, 0) == CUDA_SUCCESS);
  CHECK(cuIpcGetMemHandle(&h, CUdeviceptr(host)) == CUDA_ERROR_INVALID_VALUE);
  std::vector<uint8_t> pageable(k64);
  CHECK(cuIpcGetMemHandle(&h, CUdeviceptr(pageable.data())) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuIpcGetMemHandle(nullptr, a) == CUDA_ERROR_INVALID_VALUE);
  unsigned capable = 7;
  REQUIRE(test::attribute(capable, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, a) ==
          CUDA_SUCCESS);
  CHECK(capable == 1);
}

TEST_CASE(
    "CUDA IPC: the importer maps the exporter's memory once per allocation and both see "
    "the same bytes (driver 580)",
    "[cuda][ipc]") {
  test::world w;
  test::cuda_context();
  const CUdeviceptr a = test::cuda_alloc(2 * MiB), b = test::cuda_alloc(100),
                    b2 = test::cuda_alloc(100);
  REQUIRE(b2 - b == 512);  // one chunk
  write(a, pattern(2 * MiB, 1));
  write(b2, pattern(100, 3));
  const CUipcMemHandle ha = handle_of(a), hb = handle_of(b), hb2 = handle_of(b2);
  CUipcMemHandle hm{};
  CUdeviceptr pa = 0, pb = 0, pb2 = 0, p = 0, own = 0;
  CUcontext i = nullptr;
  {
    kernel::as_process as(importer);
    CHECK(open(p, ha) == CUDA_ERROR_NOT_INITIALIZED);
    REQUIRE(cuInit(0) == CUDA_SUCCESS);
    CHECK(open(p, ha) == CUDA_ERROR_INVALID_CONTEXT);
    REQUIRE(cuCtxCreate(&i, 0, 0) == CUDA_SUCCESS);
    own = test::cuda_alloc(2 * MiB);
    CHECK(open(p, ha, 0) == CUDA_ERROR_INVALID_VALUE);  // LAZY_ENABLE_PEER_ACCESS required
    CHECK(open(p, ha, 2) == CUDA_ERROR_INVALID_VALUE);
    CHECK(open(p, ha, 0x100) == CUDA_ERROR_INVALID_VALUE);
    REQUIRE(open(pa, ha) == CUDA_SUCCESS);
    CHECK(pa != a);
    CHECK(open(p, ha) == CUDA_SUCCESS);
    CHECK(p == pa);
    CHECK(open(p, ha, 3) == CUDA_SUCCESS);
    CHECK(open(p, ha, 0xffffffff) == CUDA_SUCCESS);
    CHECK(p == pa);
    REQUIRE(open(pb, hb) == CUDA_SUCCESS);
    REQUIRE(open(pb2, hb2) == CUDA_SUCCESS);
    CHECK(pb2 - pb == b2 - b);  // the exporter's chunk, mapped whole
    CUipcMemHandle bad{};
    CHECK(open(p, bad) == CUDA_ERROR_INVALID_VALUE);  // zeros
    std::memset(bad.reserved, 0xA5, sizeof bad.reserved);
    CHECK(open(p, bad) == CUDA_ERROR_INVALID_VALUE);
    bad = ha;
    bad.reserved[0] ^= 1;
    bad.reserved[63] ^= 1;
    CHECK(open(p, bad) == CUDA_SUCCESS);  // bytes 0 and 63 are not read
    CHECK(p == pa);
    hm = handle_of(own);
    CHECK(open(p, hm) == CUDA_ERROR_INVALID_CONTEXT);  // its own
    CHECK(cuIpcOpenMemHandle(nullptr, ha, 1) == CUDA_ERROR_INVALID_VALUE);
    // Bytes through the imported pointers, both ways.
    CHECK(read(pa, 2 * MiB) == pattern(2 * MiB, 1));
    CHECK(read(pb2, 100) == pattern(100, 3));
    write(pa, pattern(2 * MiB, 11));
    write(pb, pattern(100, 12));
    // What the imported pointer says of itself.
    CUcontext c = nullptr;
    REQUIRE(test::attribute(c, CU_POINTER_ATTRIBUTE_CONTEXT, pa + 4096) == CUDA_SUCCESS);
    CHECK(c == i);
    unsigned v = 7;
    REQUIRE(test::attribute(v, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, pa) ==
            CUDA_SUCCESS);
    CHECK(v == 0);
    REQUIRE(test::attribute(v, CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE, pa) ==
            CUDA_SUCCESS);
    CHECK(v == 0);
    size_t range = 0;
    REQUIRE(test::attribute(range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, pb) == CUDA_SUCCESS);
    CHECK(range == 100);
    CHECK(test::buffer_id(pa) == test::buffer_id(pa + 4096));
    CUipcMemHandle again;
    CHECK(cuIpcGetMemHandle(&again, pa) == CUDA_ERROR_INVALID_VALUE);  // not re-exportable
    CHECK(cuMemFree(pa) == CUDA_ERROR_INVALID_VALUE);                  // cuIpcCloseMemHandle's
    // A second context of the process cannot open what the first has open.
    CUcontext i2 = nullptr;
    REQUIRE(cuCtxCreate(&i2, 0, 0) == CUDA_SUCCESS);
    CHECK(open(p, ha) == CUDA_ERROR_INVALID_HANDLE);
    const auto got = read(pa, 4096);
    const auto want = pattern(2 * MiB, 11);
    CHECK(std::equal(got.begin(), got.end(), want.begin()));
    REQUIRE(cuCtxDestroy(i2) == CUDA_SUCCESS);
    REQUIRE(cuCtxSetCurrent(i) == CUDA_SUCCESS);
  }
  CHECK(test::buffer_id(a) != 0);
  CHECK(read(a, 2 * MiB) == pattern(2 * MiB, 11));  // the exporter sees the importer's bytes
  CHECK(read(b, 100) == pattern(100, 12));
  CHECK(read(b2, 100) == pattern(100, 3));
}

TEST_CASE(
    "CUDA IPC: each open is closed once and the memory stays while the export or an import "
    "holds it (driver 580)",
    "[cuda][ipc]") {
  test::world_config big;
  big.gpu.vram_bytes = 256 * MiB;
  test::world w(big);
  test::cuda_context();
  const uint64_t vram_before = w.driver().vram_used_bytes(0);
  const CUdeviceptr a = test::cuda_alloc(2 * MiB), c = test::cuda_alloc(64 * MiB);
  write(a, pattern(2 * MiB, 1));
  const CUipcMemHandle ha = handle_of(a), hc = handle_of(c);
  CUdeviceptr pa = 0, pc = 0, p = 0;
  kernel::as_process as(importer);
  test::cuda_context();
  const CUdeviceptr m = test::cuda_alloc(k64);
  for (int k = 0; k < 3; ++k) REQUIRE(open(pa, ha) == CUDA_SUCCESS);
  REQUIRE(open(pc, hc) == CUDA_SUCCESS);
  CHECK(pc == c);  // a 64 MiB allocation lands at the exporter's VA (driver 580)
  CHECK(cuIpcCloseMemHandle(pa + 4096) == CUDA_ERROR_INVALID_VALUE);  // interior
  CHECK(cuIpcCloseMemHandle(m) == CUDA_ERROR_INVALID_VALUE);          // not IPC memory
  CHECK(cuIpcCloseMemHandle(0) == CUDA_ERROR_INVALID_VALUE);
  for (int k = 0; k < 2; ++k) {
    REQUIRE(cuIpcCloseMemHandle(pa) == CUDA_SUCCESS);
    unsigned type = 0;
    CHECK(test::attribute(type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pa) == CUDA_SUCCESS);
  }
  REQUIRE(cuIpcCloseMemHandle(pa) == CUDA_SUCCESS);  // the third: unmapped
  unsigned type = 0;
  CHECK(test::attribute(type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pa) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuIpcCloseMemHandle(pa) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE(open(p, ha) == CUDA_SUCCESS);  // mapped again, the same VA free again
  CHECK(p == pa);
  // The exporter frees both: the importer's mappings keep working, with their bytes.
  {
    kernel::as_process ex(exporter);
    const uint64_t used = w.driver().vram_used_bytes(0);
    REQUIRE(cuMemFree(a) == CUDA_SUCCESS);
    REQUIRE(cuMemFree(c) == CUDA_SUCCESS);
    CHECK(w.driver().vram_used_bytes(0) == used);  // the exports and imports hold it
  }
  CHECK(read(p, 2 * MiB) == pattern(2 * MiB, 1));
  write(pc, pattern(64 * MiB, 14));
  CHECK(read(pc, 64 * MiB) == pattern(64 * MiB, 14));
  REQUIRE(cuIpcCloseMemHandle(p) == CUDA_SUCCESS);
  REQUIRE(cuIpcCloseMemHandle(pc) == CUDA_SUCCESS);
  REQUIRE(open(p, ha) == CUDA_SUCCESS);  // a freed allocation's handle opens (driver 580)
  CHECK(read(p, 2 * MiB) == pattern(2 * MiB, 1));
  REQUIRE(cuIpcCloseMemHandle(p) == CUDA_SUCCESS);
  // The exporter's context goes: the exports with it; nothing of A or C is left.
  {
    kernel::as_process ex(exporter);
    CUcontext x = nullptr;
    REQUIRE(cuCtxGetCurrent(&x) == CUDA_SUCCESS);
    REQUIRE(cuCtxDestroy(x) == CUDA_SUCCESS);
  }
  CHECK(open(p, ha) == CUDA_ERROR_INVALID_VALUE);
  CHECK(w.driver().vram_used_bytes(0) == vram_before + k64);  // the importer's M alone
}

TEST_CASE(
    "CUDA IPC: nv-p2p does not pin memory another process exported and an import outlives "
    "the exporter's pins (IS_GPU_DIRECT_RDMA_CAPABLE)",
    "[cuda][ipc][nv-p2p]") {
  test::world w;
  test::cuda_context();
  const CUdeviceptr a = test::cuda_alloc(2 * MiB);
  test::revocation rev;
  REQUIRE(nvidia_p2p_get_pages(0, 0, a, 2 * MiB, &rev.table, test::revocation::callback, &rev) ==
          0);
  const CUipcMemHandle ha = handle_of(a);
  CUdeviceptr pa = 0;
  {
    kernel::as_process as(importer);
    test::cuda_context();
    REQUIRE(open(pa, ha) == CUDA_SUCCESS);
    nvidia_p2p_page_table_t* t = nullptr;
    CHECK(nvidia_p2p_get_pages(0, 0, pa, 2 * MiB, &t, test::revocation::callback, &rev) == -EINVAL);
  }
  REQUIRE(cuMemFree(a) == CUDA_SUCCESS);
  CHECK(rev.calls == 1);  // the exporter's pin goes with its allocation (5.3)
  kernel::as_process as(importer);
  write(pa, pattern(2 * MiB, 5));
  CHECK(read(pa, 2 * MiB) == pattern(2 * MiB, 5));
}
