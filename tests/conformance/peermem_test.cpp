// nvidia-peermem as the consumer of nv-p2p (guide 6.7): an RDMA device registers GPU memory
// through the RDMA core's peer-memory clients (models/driver/peer/peer_memory.h), remote writes
// land in VRAM through the registration, and the NVIDIA driver's revocation (guide 5.3)
// invalidates it, after which remote accesses fail. Bytes are checked where they land.
#include <catch2/catch.hpp>

#include <vector>

#include "models/driver/peer/nvidia_peermem.h"
#include "tests/conformance/cuda_helpers.h"

using namespace p2psim;
using test::k64;

namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(i * 29 + seed + (i >> 11));
  return v;
}

// What the RDMA device does with a remote write: the MR's bus runs, through BAR1, into VRAM.
int remote_write(test::world& w, peer::rdma_core& core, uint32_t rkey, uint64_t addr,
                 const std::vector<uint8_t>& bytes) {
  std::vector<kernel::bus_run> runs;
  if (int r = core.translate(rkey, addr, bytes.size(), runs)) return r;
  size_t done = 0;
  for (const auto& run : runs)
    for (uint64_t at = 0; at < run.bytes; ++at, ++done) {
      auto vram = w.bar1(0).translate(run.bus + at - w.gpu(0).bar1_bus_base);
      if (!vram) FAIL("no BAR1 mapping at 0x" << std::hex << run.bus + at);
      w.vram(0).write(*vram, std::span<const uint8_t>(&bytes[done], 1));
    }
  REQUIRE(done == bytes.size());
  return 0;
}

std::vector<uint8_t> read_back(CUdeviceptr va, size_t n) {
  std::vector<uint8_t> v(n);
  REQUIRE(cuMemcpyDtoH(v.data(), va, n) == CUDA_SUCCESS);
  return v;
}

// An RDMA core with nvidia-peermem's clients registered as the module does: nv_mem, then the
// persistent nv_mem_nc.
struct rdma_world {
  peer::rdma_core core;
  peer::nvidia_peermem nv_mem{core, false};
  peer::nvidia_peermem nv_mem_nc{core, true};
  pci_dev hca{"mlx5_0", 0x0300, nullptr};
  rdma_world() {
    core.register_client(&nv_mem);
    core.register_client(&nv_mem_nc);
  }
};

}  // namespace

TEST_CASE(
    "nvidia-peermem: a registration of GPU memory takes remote writes into VRAM "
    "(guide 6.7)",
    "[peermem]") {
  test::world w;
  test::cuda_context();
  rdma_world r;
  const CUdeviceptr buf = test::cuda_alloc(1 << 20);
  peer::rdma_mr* mr = nullptr;
  REQUIRE(r.core.reg_mr(&r.hca, buf + 100, 300'000, &mr) == 0);  // unaligned: 64 KiB-rounded
  CHECK(mr->client == &r.nv_mem);
  CHECK(mr->first_page == buf);
  CHECK(mr->pages.size() == (300'100 + k64 - 1) / k64);
  CHECK(w.driver().live_pins() == 1);  // acquire's probe pin came and went
  const auto bytes = pattern(300'000, 5);
  REQUIRE(remote_write(w, r.core, mr->rkey, buf + 100, bytes) == 0);
  CHECK(read_back(buf + 100, bytes.size()) == bytes);
  std::vector<kernel::bus_run> runs;
  CHECK(r.core.translate(mr->rkey, buf, 16, runs) == -EACCES);  // below the registration
  REQUIRE(r.core.dereg_mr(mr) == 0);
  CHECK(w.driver().live_pins() == 0);
  CHECK(w.driver().counters().misuse == 0);
  CHECK(r.core.dereg_mr(mr) == -EINVAL);
}

TEST_CASE(
    "nvidia-peermem: cuMemFree of registered memory invalidates the registration "
    "inside the free and remote writes fail from then on (guide 5.3)",
    "[peermem]") {
  test::world w;
  test::cuda_context();
  rdma_world r;
  const CUdeviceptr buf = test::cuda_alloc(4 * k64);
  peer::rdma_mr* mr = nullptr;
  REQUIRE(r.core.reg_mr(&r.hca, buf, 4 * k64, &mr) == 0);
  const uint64_t bar1_before = w.driver().bar1_used_bytes(0);
  REQUIRE(cuMemFree(buf) == CUDA_SUCCESS);
  CHECK(mr->invalidated);
  CHECK(r.nv_mem.invalidations() == 1);
  CHECK(w.driver().live_pins() == 0);
  CHECK(w.driver().bar1_used_bytes(0) == bar1_before - 4 * k64);
  CHECK(remote_write(w, r.core, mr->rkey, buf, pattern(k64, 1)) == -EACCES);
  CHECK(r.core.stats().accesses_refused == 1);
  REQUIRE(r.core.dereg_mr(mr) == 0);         // releases only: the callback unpinned
  CHECK(w.driver().counters().misuse == 0);  // no late put_pages on the dead table
}

TEST_CASE(
    "nvidia-peermem: memory that is not GPU memory of the caller is no client's "
    "and VMM memory is taken when made gpuDirectRDMACapable",
    "[peermem][vmm]") {
  test::world w;
  test::cuda_context();
  rdma_world r;
  peer::rdma_mr* mr = nullptr;
  std::vector<uint8_t> host(1 << 16);
  CHECK(r.core.reg_mr(&r.hca, uint64_t(uintptr_t(host.data())), host.size(), &mr) == -EFAULT);
  CHECK(r.core.reg_mr(&r.hca, 0x1234'0000, k64, &mr) == -EFAULT);
  CHECK(r.core.reg_mr(&r.hca, 0x1234'0000, 0, &mr) == -EINVAL);
  // VMM: a 2 MiB handle made for RDMA, mapped read-write.
  for (unsigned char rdma : {1, 0}) {
    CUmemAllocationProp p{};
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.allocFlags.gpuDirectRDMACapable = rdma;
    CUmemGenericAllocationHandle h = 0;
    CUdeviceptr va = 0;
    REQUIRE(cuMemCreate(&h, 2 << 20, &p, 0) == CUDA_SUCCESS);
    REQUIRE(cuMemAddressReserve(&va, 2 << 20, 0, 0, 0) == CUDA_SUCCESS);
    REQUIRE(cuMemMap(va, 2 << 20, 0, h, 0) == CUDA_SUCCESS);
    CUmemAccessDesc d{};
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    REQUIRE(cuMemSetAccess(va, 2 << 20, &d, 1) == CUDA_SUCCESS);
    const int got = r.core.reg_mr(&r.hca, va, 2 << 20, &mr);
    CHECK(got == (rdma ? 0 : -EFAULT));
    if (got == 0) {
      const auto bytes = pattern(2 * k64, 9);
      REQUIRE(remote_write(w, r.core, mr->rkey, va + k64, bytes) == 0);
      CHECK(read_back(va + k64, bytes.size()) == bytes);
      REQUIRE(cuMemUnmap(va, 2 << 20) == CUDA_SUCCESS);  // revokes: the MR is invalidated
      CHECK(mr->invalidated);
      REQUIRE(r.core.dereg_mr(mr) == 0);
    } else {
      REQUIRE(cuMemUnmap(va, 2 << 20) == CUDA_SUCCESS);
    }
    REQUIRE(cuMemRelease(h) == CUDA_SUCCESS);
    REQUIRE(cuMemAddressFree(va, 2 << 20) == CUDA_SUCCESS);
  }
  CHECK(w.driver().live_pins() == 0);
}

TEST_CASE(
    "nvidia-peermem: a registration that cannot be invalidated gets the persistent client "
    "whose pin without a callback is refused since R535 and before R535 survives cuMemFree "
    "(guide 4.2)",
    "[peermem]") {
  for (bool pre_r535 : {false, true}) {
    test::world_config c;
    c.driver.accept_null_callback = pre_r535;
    test::world w(c);
    test::cuda_context();
    rdma_world r;  // nv_mem first, but it requires invalidation: the core skips it
    const CUdeviceptr buf = test::cuda_alloc(2 * k64);
    peer::rdma_mr* mr = nullptr;
    const int got = r.core.reg_mr(&r.hca, buf, 2 * k64, &mr, /*invalidation_supported=*/false);
    if (!pre_r535) {
      CHECK(got == -EINVAL);
      CHECK(w.driver().live_pins() == 0);
      CHECK(r.core.stats().refused == 1);
      continue;
    }
    REQUIRE(got == 0);
    CHECK(mr->client == &r.nv_mem_nc);
    REQUIRE(cuMemFree(buf) == CUDA_SUCCESS);
    CHECK_FALSE(mr->invalidated);  // no callback: the registration goes on
    CHECK(w.driver().live_pins() == 1);
    CHECK(remote_write(w, r.core, mr->rkey, buf, pattern(k64, 3)) == 0);  // into freed memory
    REQUIRE(r.core.dereg_mr(mr) == 0);
    CHECK(w.driver().live_pins() == 0);
  }
}

TEST_CASE(
    "nvidia-peermem: an invalidation waits for the accesses in flight through the MR and "
    "deregistration is refused while they run",
    "[peermem]") {
  test::world w;
  test::cuda_context();
  rdma_world r;
  const CUdeviceptr buf = test::cuda_alloc(2 * k64);
  peer::rdma_mr* mr = nullptr;
  REQUIRE(r.core.reg_mr(&r.hca, buf, 2 * k64, &mr) == 0);
  r.core.access_begin(*mr);
  CHECK(r.core.dereg_mr(mr) == -EBUSY);
  // The free's callback invalidates; the device's access ends while it waits.
  int waits = 0;
  r.core.set_wait_for_idle([&](peer::rdma_mr& m) {
    ++waits;
    CHECK(m.invalidated);                // no new access may start meanwhile
    CHECK(w.driver().live_pins() == 1);  // the pages are still there
    r.core.access_end(m);
  });
  REQUIRE(cuMemFree(buf) == CUDA_SUCCESS);
  CHECK(waits == 1);
  CHECK(r.core.stats().waited_invalidations == 1);
  CHECK(w.driver().live_pins() == 0);
  REQUIRE(r.core.dereg_mr(mr) == 0);
}
