// CUDA VMM memory as GPUDirect RDMA software meets it (guide 13.3, 2.1: the device attribute
// GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED; CUDA Driver API reference, "Virtual Memory
// Management"): a reserved range, physical memory mapped into it, nv-p2p pins and dma-buf
// exports of it, and what a pin sees when the application unmaps or remaps the range. The
// calls' results and checks are driver 580's (real_driver_test.cpp compares the probe's whole
// transcript); these tests follow the bytes and the pins.
#include <catch2/catch.hpp>

#include <numeric>
#include <vector>

#include "models/driver/kernel/dma_buf.h"
#include "models/driver/kernel/err_ptr.h"
#include "tests/conformance/cuda_helpers.h"

using namespace p2psim;
using test::k64;

namespace {

constexpr size_t two_mib = 2ull << 20;

CUmemAllocationProp device_memory(unsigned char rdma = 1) {
  CUmemAllocationProp p{};
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = 0;
  p.allocFlags.gpuDirectRDMACapable = rdma;
  return p;
}

CUmemGenericAllocationHandle create(size_t size, unsigned char rdma = 1) {
  CUmemGenericAllocationHandle h = 0;
  const CUmemAllocationProp p = device_memory(rdma);
  REQUIRE(cuMemCreate(&h, size, &p, 0) == CUDA_SUCCESS);
  return h;
}

CUdeviceptr reserve(size_t size, CUdeviceptr hint = 0, size_t align = 0) {
  CUdeviceptr va = 0;
  REQUIRE(cuMemAddressReserve(&va, size, align, hint, 0) == CUDA_SUCCESS);
  return va;
}

CUresult set_access(CUdeviceptr va, size_t size, CUmemAccess_flags flags) {
  CUmemAccessDesc d{};
  d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  d.location.id = 0;
  d.flags = flags;
  return cuMemSetAccess(va, size, &d, 1);
}

// Reserved, mapped and readable and writable by GPU 0: the way NCCL and UCX set memory up.
CUdeviceptr map_rw(CUmemGenericAllocationHandle h, size_t size, CUdeviceptr va) {
  REQUIRE(cuMemMap(va, size, 0, h, 0) == CUDA_SUCCESS);
  REQUIRE(set_access(va, size, CU_MEM_ACCESS_FLAGS_PROT_READWRITE) == CUDA_SUCCESS);
  return va;
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(i * 13 + seed + (i >> 16));
  return v;
}

std::vector<uint8_t> read_back(CUdeviceptr va, size_t n) {
  std::vector<uint8_t> v(n);
  REQUIRE(cuMemcpyDtoH(v.data(), va, n) == CUDA_SUCCESS);
  return v;
}

// What a peer's DMA engine does with a pin: writes through the GPU's BAR1 page by page.
void write_through_bar1(test::world& w, const nvidia_p2p_page_table_t& t,
                        const std::vector<uint8_t>& bytes) {
  for (uint32_t i = 0; i < t.entries; ++i) {
    auto vram = w.bar1(0).translate(t.pages[i]->physical_address - w.gpu(0).bar1_bus_base);
    REQUIRE(vram);
    w.vram(0).write(*vram, std::span<const uint8_t>(&bytes[i * k64], k64));
  }
}

}  // namespace

TEST_CASE(
    "VMM: a reservation takes its hint when the range is free and refuses one that "
    "misses its alignment (cuMemAddressReserve)",
    "[vmm]") {
  test::world w;
  test::cuda_context();
  const CUdeviceptr a = reserve(4 * two_mib);
  REQUIRE(cuMemAddressFree(a, 4 * two_mib) == CUDA_SUCCESS);
  CHECK(reserve(2 * two_mib, a) == a);  // free again: honoured
  const CUdeviceptr taken = reserve(two_mib, a);
  CHECK(taken != a);  // a hint is a hint: the range is taken, so elsewhere
  CUdeviceptr va = 0;
  const CUdeviceptr odd = (a + 2 * two_mib) % (2 * two_mib) ? a + 2 * two_mib : a + 3 * two_mib;
  CHECK(cuMemAddressReserve(&va, two_mib, 2 * two_mib, odd, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemAddressReserve(&va, two_mib, 3 * two_mib, 0, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemAddressReserve(&va, two_mib / 2, 0, 0, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuMemAddressFree(a, 4 * two_mib) == CUDA_ERROR_INVALID_VALUE);  // not one reservation
  CHECK(cuMemAddressFree(a, 2 * two_mib) == CUDA_SUCCESS);
  CHECK(cuMemAddressFree(taken, two_mib) == CUDA_SUCCESS);
}

TEST_CASE("VMM: bytes copied through one mapping are the handle's wherever it is mapped next",
          "[vmm]") {
  test::world w;
  test::cuda_context();
  const CUmemGenericAllocationHandle h = create(two_mib);
  const CUdeviceptr r = reserve(2 * two_mib);
  map_rw(h, two_mib, r);
  const auto bytes = pattern(two_mib, 3);
  REQUIRE(cuMemcpyHtoD(r, bytes.data(), two_mib) == CUDA_SUCCESS);
  REQUIRE(cuMemUnmap(r, two_mib) == CUDA_SUCCESS);
  CHECK(cuMemcpyDtoH(std::vector<uint8_t>(16).data(), r, 16) == CUDA_ERROR_INVALID_VALUE);
  map_rw(h, two_mib, r + two_mib);  // the other half of the reservation
  CHECK(read_back(r + two_mib, two_mib) == bytes);
  // Read-only: copies out work, copies in are refused before anything is written.
  REQUIRE(set_access(r + two_mib, two_mib, CU_MEM_ACCESS_FLAGS_PROT_READ) == CUDA_SUCCESS);
  const auto other = pattern(4096, 9);
  CHECK(cuMemcpyHtoD(r + two_mib, other.data(), other.size()) == CUDA_ERROR_INVALID_VALUE);
  CHECK(read_back(r + two_mib, two_mib) == bytes);
  REQUIRE(cuMemUnmap(r + two_mib, two_mib) == CUDA_SUCCESS);
  REQUIRE(cuMemRelease(h) == CUDA_SUCCESS);
  REQUIRE(cuMemAddressFree(r, 2 * two_mib) == CUDA_SUCCESS);
}

TEST_CASE(
    "VMM: the memory lives while a handle or a mapping holds it and VRAM comes back "
    "with the last (cuMemRelease and cuMemUnmap)",
    "[vmm]") {
  test::world w;
  test::cuda_context();
  size_t free0 = 0, total = 0, free1 = 0;
  REQUIRE(cuMemGetInfo(&free0, &total) == CUDA_SUCCESS);
  const CUmemGenericAllocationHandle h = create(2 * two_mib);
  const CUdeviceptr r = map_rw(h, 2 * two_mib, reserve(2 * two_mib));
  const auto bytes = pattern(2 * two_mib, 5);
  REQUIRE(cuMemcpyHtoD(r, bytes.data(), bytes.size()) == CUDA_SUCCESS);
  REQUIRE(cuMemRelease(h) == CUDA_SUCCESS);  // mapped: the memory stays
  REQUIRE(cuMemGetInfo(&free1, &total) == CUDA_SUCCESS);
  CHECK(free0 - free1 == 2 * two_mib);
  CHECK(read_back(r, bytes.size()) == bytes);
  CHECK(cuMemRelease(h) == CUDA_ERROR_INVALID_VALUE);  // its one reference is gone
  REQUIRE(cuMemUnmap(r, 2 * two_mib) == CUDA_SUCCESS);
  REQUIRE(cuMemGetInfo(&free1, &total) == CUDA_SUCCESS);
  CHECK(free1 == free0);
  CUmemAllocationProp gone{};
  CHECK(cuMemGetAllocationPropertiesFromHandle(&gone, h) == CUDA_ERROR_INVALID_VALUE);
  REQUIRE(cuMemAddressFree(r, 2 * two_mib) == CUDA_SUCCESS);
}

TEST_CASE(
    "VMM: nv-p2p pins memory made gpuDirectRDMACapable and a peer's writes through the "
    "pin land in it (guide 2.1 and GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED)",
    "[vmm][nv-p2p]") {
  test::world w;
  test::cuda_context();
  int vmm_rdma = 0;
  REQUIRE(cuDeviceGetAttribute(&vmm_rdma,
                               CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED,
                               0) == CUDA_SUCCESS);
  CHECK(vmm_rdma == 1);
  const CUmemGenericAllocationHandle h = create(two_mib, 1), plain = create(two_mib, 0);
  const CUdeviceptr r = reserve(2 * two_mib);
  map_rw(h, two_mib, r);
  map_rw(plain, two_mib, r + two_mib);
  unsigned int capable = 7;
  REQUIRE(test::attribute(capable, CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE, r) ==
          CUDA_SUCCESS);
  CHECK(capable == 1);
  const auto t = test::tokens(r);
  test::revocation rev;
  REQUIRE(nvidia_p2p_get_pages(t.p2pToken, t.vaSpaceToken, r, two_mib, &rev.table,
                               test::revocation::callback, &rev) == 0);
  REQUIRE(rev.table->entries == two_mib / k64);
  const auto bytes = pattern(two_mib, 11);
  write_through_bar1(w, *rev.table, bytes);
  CHECK(read_back(r, two_mib) == bytes);
  // Made without the flag: nv-p2p refuses it (gdrcopy #257), however it is mapped.
  nvidia_p2p_page_table_t* refused = nullptr;
  CHECK(nvidia_p2p_get_pages(t.p2pToken, t.vaSpaceToken, r + two_mib, two_mib, &refused,
                             test::revocation::callback, &rev) == -EINVAL);
  CHECK(refused == nullptr);
  REQUIRE(nvidia_p2p_put_pages(t.p2pToken, t.vaSpaceToken, r, rev.table) == 0);
  CHECK(rev.calls == 0);
}

TEST_CASE(
    "VMM: unmapping a pinned range runs the pin's free callback before cuMemUnmap "
    "returns - what is mapped there next needs a new pin (guide 5.3)",
    "[vmm][nv-p2p]") {
  test::world w;
  test::cuda_context();
  const CUmemGenericAllocationHandle h1 = create(two_mib), h2 = create(two_mib);
  const CUdeviceptr r = map_rw(h1, two_mib, reserve(two_mib));
  const auto t = test::tokens(r);
  test::revocation rev;
  REQUIRE(nvidia_p2p_get_pages(t.p2pToken, t.vaSpaceToken, r, two_mib, &rev.table,
                               test::revocation::callback, &rev) == 0);
  const uint64_t bar1_before = w.driver().bar1_used_bytes(0);
  REQUIRE(cuMemUnmap(r, two_mib) == CUDA_SUCCESS);
  CHECK(rev.calls == 1);
  CHECK(w.driver().live_pins() == 0);
  CHECK(w.driver().bar1_used_bytes(0) == bar1_before - two_mib);
  // Another handle at the same VA: its bytes, not the old pin's frames.
  map_rw(h2, two_mib, r);
  const auto bytes = pattern(two_mib, 21);
  REQUIRE(cuMemcpyHtoD(r, bytes.data(), two_mib) == CUDA_SUCCESS);
  test::revocation again;
  REQUIRE(nvidia_p2p_get_pages(t.p2pToken, t.vaSpaceToken, r, two_mib, &again.table,
                               test::revocation::callback, &again) == 0);
  std::vector<uint8_t> seen(two_mib);
  for (uint32_t i = 0; i < again.table->entries; ++i) {
    auto vram =
        w.bar1(0).translate(again.table->pages[i]->physical_address - w.gpu(0).bar1_bus_base);
    REQUIRE(vram);
    w.vram(0).read(*vram, std::span<uint8_t>(&seen[i * k64], k64));
  }
  CHECK(seen == bytes);
  REQUIRE(nvidia_p2p_put_pages(t.p2pToken, t.vaSpaceToken, r, again.table) == 0);
  REQUIRE(cuMemUnmap(r, two_mib) == CUDA_SUCCESS);
  CHECK(again.calls == 0);
  REQUIRE(cuMemRelease(h1) == CUDA_SUCCESS);
  REQUIRE(cuMemRelease(h2) == CUDA_SUCCESS);
  REQUIRE(cuMemAddressFree(r, two_mib) == CUDA_SUCCESS);
}

TEST_CASE(
    "VMM: no context owns VMM memory: it is mapped without one and outlives "
    "cuCtxDestroy",
    "[vmm]") {
  test::world w;
  REQUIRE(cuInit(0) == CUDA_SUCCESS);
  const CUmemGenericAllocationHandle h = create(two_mib);
  const CUdeviceptr r = map_rw(h, two_mib, reserve(two_mib));  // no context yet
  CUcontext c = test::cuda_context();
  const auto bytes = pattern(two_mib, 33);
  REQUIRE(cuMemcpyHtoD(r, bytes.data(), two_mib) == CUDA_SUCCESS);
  REQUIRE(cuCtxDestroy(c) == CUDA_SUCCESS);
  test::cuda_context();
  CHECK(read_back(r, two_mib) == bytes);
  CUcontext owner = reinterpret_cast<CUcontext>(1);
  REQUIRE(test::attribute(owner, CU_POINTER_ATTRIBUTE_CONTEXT, r) == CUDA_SUCCESS);
  CHECK(owner == nullptr);
  REQUIRE(cuMemUnmap(r, two_mib) == CUDA_SUCCESS);
  REQUIRE(cuMemRelease(h) == CUDA_SUCCESS);
  REQUIRE(cuMemAddressFree(r, two_mib) == CUDA_SUCCESS);
}

TEST_CASE(
    "VMM: a dma-buf of VMM memory holds its VRAM after cuMemUnmap and cuMemRelease "
    "until the descriptor closes (guide 4.1)",
    "[vmm][dma-buf]") {
  test::world w;
  test::cuda_context();
  size_t free0 = 0, total = 0, now = 0;
  REQUIRE(cuMemGetInfo(&free0, &total) == CUDA_SUCCESS);
  const CUmemGenericAllocationHandle h = create(2 * two_mib, 0);  // dma-buf takes either
  const CUdeviceptr r = map_rw(h, 2 * two_mib, reserve(2 * two_mib));
  int fd = -1;
  REQUIRE(cuMemGetHandleForAddressRange(&fd, r, 2 * two_mib, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                                        0) == CUDA_SUCCESS);
  REQUIRE(cuMemUnmap(r, 2 * two_mib) == CUDA_SUCCESS);
  REQUIRE(cuMemRelease(h) == CUDA_SUCCESS);
  REQUIRE(cuMemGetInfo(&now, &total) == CUDA_SUCCESS);
  CHECK(free0 - now == 2 * two_mib);
  REQUIRE(kernel::current_os().dma_bufs().close(kernel::current_pid(), fd) == 0);
  REQUIRE(cuMemGetInfo(&now, &total) == CUDA_SUCCESS);
  CHECK(now == free0);
  REQUIRE(cuMemAddressFree(r, 2 * two_mib) == CUDA_SUCCESS);
}

TEST_CASE(
    "VMM: a handle exported as a POSIX descriptor imports as a new handle on the same "
    "memory which outlives the descriptor and the exporter's handle",
    "[vmm]") {
  test::world w;
  test::cuda_context();
  CUmemAllocationProp p = device_memory(1);
  p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemGenericAllocationHandle h = 0, plain = create(two_mib), imported = 0;
  REQUIRE(cuMemCreate(&h, two_mib, &p, 0) == CUDA_SUCCESS);
  int fd = -1;
  CHECK(cuMemExportToShareableHandle(&fd, plain, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) ==
        CUDA_ERROR_INVALID_VALUE);  // made without POSIX_FD among its types
  REQUIRE(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) ==
          CUDA_SUCCESS);
  CHECK(IS_ERR(dma_buf_get(fd)));  // a descriptor, but not a dma-buf: -EINVAL
  CHECK(PTR_ERR(dma_buf_get(fd)) == -EINVAL);
  const CUdeviceptr r = map_rw(h, two_mib, reserve(2 * two_mib));
  const auto bytes = pattern(two_mib, 41);
  REQUIRE(cuMemcpyHtoD(r, bytes.data(), two_mib) == CUDA_SUCCESS);
  REQUIRE(cuMemImportFromShareableHandle(&imported, reinterpret_cast<void*>(intptr_t(fd)),
                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) == CUDA_SUCCESS);
  CHECK(imported != h);
  REQUIRE(kernel::current_os().dma_bufs().close(kernel::current_pid(), fd) == 0);
  REQUIRE(cuMemUnmap(r, two_mib) == CUDA_SUCCESS);
  REQUIRE(cuMemRelease(h) == CUDA_SUCCESS);  // the import still holds the memory
  map_rw(imported, two_mib, r + two_mib);
  CHECK(read_back(r + two_mib, two_mib) == bytes);
  CHECK(cuMemImportFromShareableHandle(&imported, reinterpret_cast<void*>(intptr_t(fd)),
                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ==
        CUDA_ERROR_UNKNOWN);  // closed
  REQUIRE(cuMemUnmap(r + two_mib, two_mib) == CUDA_SUCCESS);
  REQUIRE(cuMemRelease(imported) == CUDA_SUCCESS);
  REQUIRE(cuMemRelease(plain) == CUDA_SUCCESS);
  REQUIRE(cuMemAddressFree(r, 2 * two_mib) == CUDA_SUCCESS);
}

TEST_CASE(
    "VMM: a process's exit unmaps its VMM memory - pins on it get their callbacks and "
    "its VRAM comes back (guide 5.3)",
    "[vmm][nv-p2p]") {
  test::world w;
  const uint64_t used_before = w.driver().vram_used_bytes(0);
  test::revocation rev;
  {
    kernel::as_process app(300);
    test::cuda_context();
    const CUmemGenericAllocationHandle h = create(two_mib);
    const CUdeviceptr r = map_rw(h, two_mib, reserve(two_mib));
    const auto t = test::tokens(r);
    REQUIRE(nvidia_p2p_get_pages(t.p2pToken, t.vaSpaceToken, r, two_mib, &rev.table,
                                 test::revocation::callback, &rev) == 0);
    CHECK(w.driver().vram_used_bytes(0) == used_before + two_mib);
  }
  w.driver().process_exit(300);
  CHECK(rev.calls == 1);
  CHECK(w.driver().live_pins() == 0);
  CHECK(w.driver().vram_used_bytes(0) == used_before);
}
