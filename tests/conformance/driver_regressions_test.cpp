// Regressions: each class of wrong answer the driver models once gave, as a driver author would
// meet it, named after the rule of the GPUDirect RDMA guide (13.3) it breaks. The property test
// (tests/driver_ref) looks for more of the same under random call sequences.
#include <catch2/catch.hpp>

#include <climits>
#include <vector>

#include "models/driver/peer/regcache.h"
#include "models/iommu/iommu.h"
#include "tests/conformance/cuda_helpers.h"

using namespace p2psim;
using test::k64;

namespace {

// A peer's write of `bytes` at bus address `bus`, decoded as the GPU model does (BAR1 window,
// BAR1 page table); false when the GPU would answer UR (an unmapped page).
bool peer_write(test::world& w, int gpu, uint64_t bus, const std::vector<uint8_t>& bytes) {
  auto at = w.bar1(gpu).translate(bus - w.gpu(gpu).bar1_bus_base);
  if (!at) return false;
  w.vram(gpu).write(*at, bytes);
  return true;
}

std::vector<uint8_t> read_back(CUdeviceptr p, size_t n) {
  std::vector<uint8_t> out(n);
  REQUIRE(cuMemcpyDtoH(out.data(), p, n) == CUDA_SUCCESS);
  return out;
}

void ignore(void*) {}

int g_revoked = 0;
void count(void*) {
  ++g_revoked;
}

}  // namespace

TEST_CASE("4.2: after cuMemFree a persistent pin's DMA never reaches the next buffer at that VA",
          "[regression][persistent]") {
  test::world w;
  test::cuda_context();
  const CUdeviceptr p = test::cuda_alloc(2 * k64);
  nvidia_p2p_page_table_t* t = nullptr;
  REQUIRE(nvidia_p2p_get_pages_persistent(p, 2 * k64, &t, 0) == 0);
  const uint64_t bus = t->pages[1]->physical_address;
  const auto old_frame = w.driver().vram_of(w.pid(), p + k64);
  REQUIRE(cuMemFree(p) == CUDA_SUCCESS);
  // The same size again: the VA comes back (guide 5.6's example), the VRAM must not.
  const CUdeviceptr q = test::cuda_alloc(2 * k64);
  CHECK(q == p);
  const auto new_frame = w.driver().vram_of(w.pid(), q + k64);
  REQUIRE(old_frame);
  REQUIRE(new_frame);
  CHECK(new_frame->second != old_frame->second);
  const std::vector<uint8_t> mine(64, 0x5a);
  REQUIRE(cuMemcpyHtoD(q + k64, mine.data(), mine.size()) == CUDA_SUCCESS);
  // The persistent mapping stays until it is released (4.2) and still leads to the old pages.
  CHECK(peer_write(w, 0, bus, std::vector<uint8_t>(64, 0xee)));
  CHECK(read_back(q + k64, 64) == mine);
  REQUIRE(nvidia_p2p_put_pages_persistent(p, t, 0) == 0);
  CHECK_FALSE(peer_write(w, 0, bus, std::vector<uint8_t>(64, 0xee)));  // now unmapped: UR
  CHECK(read_back(q + k64, 64) == mine);
}

TEST_CASE("4.2: a persistent pin's VRAM is never handed to an allocation on another GPU",
          "[regression][persistent]") {
  test::world w(test::gpus(2));
  CUcontext a = test::cuda_context(0);
  const CUdeviceptr p = test::cuda_alloc(k64);
  nvidia_p2p_page_table_t* t = nullptr;
  REQUIRE(nvidia_p2p_get_pages_persistent(p, k64, &t, 0) == 0);
  REQUIRE(cuMemFree(p) == CUDA_SUCCESS);
  REQUIRE(cuCtxDestroy(a) == CUDA_SUCCESS);
  test::cuda_context(1);
  const CUdeviceptr q = test::cuda_alloc(k64);
  const auto where = w.driver().vram_of(w.pid(), q);
  REQUIRE(where);
  CHECK(where->first == 1);  // the new buffer's own GPU, whatever its VA
  const std::vector<uint8_t> mine(32, 0x11);
  REQUIRE(cuMemcpyHtoD(q, mine.data(), mine.size()) == CUDA_SUCCESS);
  CHECK(peer_write(w, 0, t->pages[0]->physical_address, std::vector<uint8_t>(32, 0x99)));
  CHECK(read_back(q, 32) == mine);
  CHECK(nvidia_p2p_put_pages_persistent(p, t, 0) == 0);
}

TEST_CASE("5.3: freeing a neighbour that shares the 64 KiB page revokes no live pin",
          "[regression][callback]") {
  test::world w;
  test::cuda_context();
  const CUdeviceptr p = test::cuda_alloc(1024), q = test::cuda_alloc(1024);
  REQUIRE(p / k64 == q / k64);  // small buffers share a GPU page (guide 5.2)
  g_revoked = 0;
  nvidia_p2p_page_table_t* t = nullptr;
  REQUIRE(nvidia_p2p_get_pages(0, 0, p / k64 * k64, k64, &t, count, nullptr) == 0);
  REQUIRE(cuMemFree(q) == CUDA_SUCCESS);
  CHECK(g_revoked == 0);  // the pinned memory, p, is still allocated
  CHECK(w.driver().live_pins() == 1);
  CHECK(w.bar1(0).mapped_pages() == 1);
  REQUIRE(cuMemFree(p) == CUDA_SUCCESS);
  CHECK(g_revoked == 1);  // the page's last allocation went: now it is revoked
  CHECK(w.driver().live_pins() == 0);
}

TEST_CASE("6.5: the registration cache keeps serving a live buffer whose neighbour was freed",
          "[regression][regcache]") {
  test::world w;
  test::cuda_context();
  pci_dev nic{"nic0", 0x0400, nullptr};
  peer::kmd kmd(&nic, false);
  peer::regcache cache(kmd, {});
  const CUdeviceptr p = test::cuda_alloc(1024), q = test::cuda_alloc(1024);
  peer::kmd_region* r = nullptr;
  REQUIRE(cache.acquire(p, 1024, &r) == 0);
  cache.release(r);
  REQUIRE(cuMemFree(q) == CUDA_SUCCESS);
  peer::kmd_region* again = nullptr;
  REQUIRE(cache.acquire(p, 1024, &again) == 0);
  CHECK(again == r);  // a hit: nothing revoked it
  CHECK_FALSE(again->invalidated);
  std::vector<peer::bus_segment> segs;
  CHECK(kmd.dma_segments(*again, p, 1024, 0, segs) == 0);
  CHECK(cache.stats().hits == 1);
}

TEST_CASE("7.3: a range that wraps around 2^64 is -EINVAL everywhere, never a crash",
          "[regression][misuse]") {
  test::world w;
  test::cuda_context();
  const uint64_t top = ~uint64_t(0) - k64 + 1;  // the last 64 KiB page of the address space
  nvidia_p2p_page_table_t* t = nullptr;
  CHECK(nvidia_p2p_get_pages(0, 0, top, 2 * k64, &t, ignore, nullptr) == -EINVAL);
  CHECK(nvidia_p2p_get_pages_persistent(top, 2 * k64, &t, 0) == -EINVAL);
  CHECK(nvidia_p2p_get_pages(0, 0, k64, ~uint64_t(0) - k64 + 1, &t, ignore, nullptr) == -EINVAL);
  CHECK(t == nullptr);
  pci_dev nic{"nic0", 0x0400, nullptr};
  peer::kmd kmd(&nic, false);
  peer::kmd_region* r = nullptr;
  CHECK(kmd.pin(~uint64_t(0) - 100, 200, &r) == -EINVAL);
  CHECK(kmd.pin(~uint64_t(0) - 100, 50, &r) == -EINVAL);  // in range, but rounding out wraps
  peer::regcache cache(kmd, {});
  CHECK(cache.acquire(~uint64_t(0) - 100, 200, &r) == -EINVAL);
  const CUdeviceptr p = test::cuda_alloc(k64);
  CHECK(cache.acquire(p, ~uint64_t(0), &r) == -EINVAL);  // past the allocation, wrapping
  CHECK(w.bar1(0).mapped_pages() == 0);
}

namespace {
struct repin {
  CUdeviceptr self = 0, other = 0;
  nvidia_p2p_page_table_t* table = nullptr;
  nvidia_p2p_page_table_t* inner = nullptr;
  int same = 1, different = 1;
};
void repin_callback(void* data) {
  auto* s = static_cast<repin*>(data);
  // Pins made from inside a callback grow the driver's pin index while it walks the pins
  // being revoked.
  for (int i = 0; i < 64; ++i) {
    nvidia_p2p_page_table_t* spare = nullptr;
    if (nvidia_p2p_get_pages(0, 0, s->other, k64, &spare, ignore, nullptr) == 0)
      nvidia_p2p_put_pages(0, 0, s->other, spare);
  }
  s->same = nvidia_p2p_get_pages(0, 0, s->self, k64, &s->inner, ignore, nullptr);
  s->different = nvidia_p2p_get_pages(0, 0, s->other, k64, &s->inner, ignore, nullptr);
  nvidia_p2p_free_page_table(s->table);
}
}  // namespace

TEST_CASE("5.3: a free callback may pin again: freed pages are refused, others pinned",
          "[regression][callback]") {
  test::world w;
  test::cuda_context();
  repin s;
  s.self = test::cuda_alloc(k64);
  s.other = test::cuda_alloc(k64);
  std::vector<repin> more(8);  // several pins revoked by one free, each pinning again
  REQUIRE(nvidia_p2p_get_pages(0, 0, s.self, k64, &s.table, repin_callback, &s) == 0);
  for (auto& m : more) {
    m.self = s.self;
    m.other = s.other;
    REQUIRE(nvidia_p2p_get_pages(0, 0, s.self, k64, &m.table, repin_callback, &m) == 0);
  }
  REQUIRE(cuMemFree(s.self) == CUDA_SUCCESS);
  CHECK(s.same == -EINVAL);  // its memory is being freed
  CHECK(s.different == 0);
  for (const auto& m : more) CHECK(m.different == 0);
  CHECK(w.driver().live_pins() == 1 + more.size());  // the pins of `other` made in callbacks
  CHECK(nvidia_p2p_put_pages(0, 0, s.other, s.inner) == 0);
  CHECK(w.driver().live_pins() == more.size());
}

TEST_CASE("4.2 (R535 nv-p2p.c): a late dma_unmap_pages never unmaps a newer mapping",
          "[regression][dma-map]") {
  test::world w;
  test::cuda_context();
  const CUdeviceptr p = test::cuda_alloc(k64);
  nvidia_p2p_page_table_t* t = nullptr;
  REQUIRE(nvidia_p2p_get_pages(0, 0, p, k64, &t, ignore, nullptr) == 0);
  iommu::iommu_params ip;
  ip.mode = iommu::iommu_mode::translating;
  iommu::iommu_domain dom(ip);
  pci_dev nic{"nic1", 0x0500, &dom};
  // Map and unmap many times, keeping each stale pointer: the driver's memory for a new mapping
  // is where an old one was, unless the old one is still recognised.
  std::vector<nvidia_p2p_dma_mapping_t*> stale;
  for (int i = 0; i < 16; ++i) {
    nvidia_p2p_dma_mapping_t* m = nullptr;
    REQUIRE(nvidia_p2p_dma_map_pages(&nic, t, &m) == 0);
    REQUIRE(nvidia_p2p_dma_unmap_pages(&nic, t, m) == 0);
    stale.push_back(m);
  }
  nvidia_p2p_dma_mapping_t* live = nullptr;
  REQUIRE(nvidia_p2p_dma_map_pages(&nic, t, &live) == 0);
  const uint64_t iova = live->dma_addresses[0];
  for (auto* m : stale) CHECK(nvidia_p2p_dma_unmap_pages(&nic, t, m) == 0);  // late: tolerated
  CHECK(dom.translate(iova, true).ok);  // ... and the live mapping is still there
  CHECK(nvidia_p2p_dma_unmap_pages(&nic, t, live) == 0);
  CHECK_FALSE(dom.translate(iova, true).ok);
  CHECK(nvidia_p2p_put_pages(0, 0, p, t) == 0);
}
