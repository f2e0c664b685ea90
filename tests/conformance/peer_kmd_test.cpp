// The third-party kernel driver model (models/driver/peer/kmd): the guide's pin path with
// 64 KiB rounding (6.2), unpinning (6.3), the free callback that waits for pending transfers
// (6.4), and DMA descriptors built from the page table or the DMA mapping.
#include <catch2/catch.hpp>

#include "models/driver/peer/kmd.h"
#include "models/iommu/iommu.h"
#include "tests/conformance/nv_p2p_fixture.h"

using namespace p2psim;
using test::k64;
using test::p2p_world;

TEST_CASE("6.2: the pin path rounds the range out to 64 KiB boundaries", "[peer]") {
  p2p_world w;
  uint64_t va = w.alloc(8 * k64);
  pci_dev nic{"nic0", 0x0400, nullptr};
  peer::kmd k(&nic, false);
  peer::kmd_region* r = nullptr;
  REQUIRE(k.pin(va + k64 + 100, 2 * k64, &r) == 0);  // 100 B into page 1, ends in page 3
  CHECK(r->va == va + k64);
  CHECK(r->size == 3 * k64);
  CHECK(r->page_table->entries == 3);
  CHECK(k.pin(va, 0, &r) == -EINVAL);  // "if (!size) return -EINVAL"
}

TEST_CASE("6.2: DMA descriptors come from the page table, merged where BAR1 is contiguous",
          "[peer]") {
  p2p_world w;
  uint64_t va = w.alloc(4 * k64);
  pci_dev nic{"nic0", 0x0400, nullptr};
  peer::kmd k(&nic, false);
  peer::kmd_region* r = nullptr;
  REQUIRE(k.pin(va, 4 * k64, &r) == 0);
  std::vector<peer::bus_segment> segs;
  REQUIRE(k.dma_segments(*r, va + 1000, 3 * k64, 0, segs) == 0);
  uint64_t total = 0;
  for (const auto& s : segs) total += s.length;
  CHECK(total == 3 * k64);
  CHECK(segs.front().bus_address == r->page_table->pages[0]->physical_address + 1000);
  CHECK(k.dma_segments(*r, va + 4 * k64, 1, 0, segs) == -EINVAL);  // outside the region
}

TEST_CASE("6.2 and 4.6: with a translating IOMMU descriptors carry I/O virtual addresses",
          "[peer]") {
  p2p_world w;
  uint64_t va = w.alloc(2 * k64);
  iommu::iommu_params ip;
  ip.mode = iommu::iommu_mode::translating;
  iommu::iommu_domain dom(ip);
  pci_dev nic{"nic0", 0x0400, &dom};
  peer::kmd k(&nic, true);
  peer::kmd_region* r = nullptr;
  REQUIRE(k.pin(va, 2 * k64, &r) == 0);
  std::vector<peer::bus_segment> segs;
  REQUIRE(k.dma_segments(*r, va, 2 * k64, 0, segs) == 0);
  auto tr = dom.translate(segs.front().bus_address, true);
  REQUIRE(tr.ok);
  CHECK(tr.address == r->page_table->pages[0]->physical_address);
  REQUIRE(k.unpin(r) == 0);
  CHECK_FALSE(dom.translate(segs.front().bus_address, true).ok);
}

TEST_CASE("6.4: the free callback waits for pending transfers before freeing the page table",
          "[peer]") {
  p2p_world w;
  uint64_t va = w.alloc(k64);
  pci_dev nic{"nic0", 0x0400, nullptr};
  peer::kmd k(&nic, false);
  peer::kmd_region* r = nullptr;
  REQUIRE(k.pin(va, k64, &r) == 0);
  k.dma_begin(*r);
  bool waited = false;
  bool mapped_while_waiting = false;
  k.set_wait_for_idle([&](peer::kmd_region& region) {
    // The simulation waits here in simulated time; the DMA finishes meanwhile.
    mapped_while_waiting = w.bar1[0]->mapped_pages() == 1;
    waited = true;
    k.dma_end(region);
  });
  REQUIRE(w.driver.mem_free(100, va));
  CHECK(waited);
  CHECK(mapped_while_waiting);  // BAR1 still mapped while the DMA drained
  CHECK(r->in_flight == 0);
  CHECK(r->invalidated);
  CHECK(w.bar1[0]->mapped_pages() == 0);
  CHECK(k.stats().waited_callbacks == 1);
  // 6.4 step 3: "nvidia_p2p_put_pages() should not be called" afterwards: refused if tried.
  CHECK(k.unpin(r) == -EINVAL);
  std::vector<peer::bus_segment> segs;
  CHECK(k.dma_segments(*r, va, 16, 0, segs) == -EINVAL);  // no DMA from a revoked region
  // Its record stays until the owner, having seen the revocation, forgets it.
  CHECK(k.regions().size() == 1);
  CHECK(k.forget(r) == 0);
  CHECK(k.regions().empty());
}

TEST_CASE("6.4: only a revoked region can be forgotten, and only once", "[peer]") {
  p2p_world w;
  uint64_t va = w.alloc(2 * k64);
  pci_dev nic{"nic0", 0x0400, nullptr};
  peer::kmd k(&nic, false);
  peer::kmd_region *live = nullptr, *revoked = nullptr;
  REQUIRE(k.pin(va, k64, &live) == 0);
  CHECK(k.forget(live) == -EINVAL);  // still pinned: unpin it instead
  CHECK(k.forget(nullptr) == -EINVAL);
  REQUIRE(k.unpin(live) == 0);
  uint64_t other = w.alloc(k64);
  REQUIRE(k.pin(other, k64, &revoked) == 0);
  REQUIRE(w.driver.mem_free(100, other));
  REQUIRE(revoked->invalidated);
  REQUIRE(k.forget(revoked) == 0);
  CHECK(k.regions().empty());
}

TEST_CASE("6.3: unpinning returns the BAR1 pages", "[peer]") {
  p2p_world w;
  uint64_t va = w.alloc(3 * k64);
  pci_dev nic{"nic0", 0x0400, nullptr};
  peer::kmd k(&nic, false);
  peer::kmd_region* r = nullptr;
  REQUIRE(k.pin(va, 3 * k64, &r) == 0);
  CHECK(w.bar1[0]->mapped_pages() == 3);
  REQUIRE(k.unpin(r) == 0);
  CHECK(w.bar1[0]->mapped_pages() == 0);
  CHECK(k.stats().pins == 1);
  CHECK(k.stats().unpins == 1);
}
