// The IOMMU domain: identity modes, I/O page tables, permissions, the IOTLB (GPUDirect RDMA
// 13.3, 5.4 IOMMUs: GPUDirect needs the IOMMU off or in pass-through, or I/O virtual
// addresses for the peer; docs/design.md, "Topology classes").
#include <catch2/catch.hpp>

#include <stdexcept>

#include "models/iommu/iommu.h"

using namespace p2psim::iommu;

namespace {

constexpr uint64_t k_page = 4096;

iommu_params translating(uint32_t iotlb_entries = 64) {
  iommu_params p;
  p.mode = iommu_mode::translating;
  p.iotlb_entries = iotlb_entries;
  return p;
}

}  // namespace

TEST_CASE("iommu: off and pass-through are the identity", "[iommu]") {
  // GPUDirect RDMA 13.3, 5.4 IOMMUs: pass-through keeps addresses 1:1 for every device.
  for (iommu_mode m : {iommu_mode::off, iommu_mode::passthrough}) {
    iommu_params p;
    p.mode = m;
    iommu_domain d(p);
    INFO(to_string(m));
    CHECK(d.mode() == m);
    CHECK(d.map(0x1234'5678, 100) == 0x1234'5678u);
    auto t = d.translate(0xdead'beef, true);
    CHECK(t.ok);
    CHECK(t.address == 0xdead'beefu);
    CHECK(t.iotlb_hit);  // no walk, no extra latency
    CHECK(d.translate(7, false).ok);
    CHECK(d.unmap(0x1234'5678, 100));
    CHECK(d.stats().faults == 0);
    CHECK(d.stats().translations == 2);
    CHECK(d.stats().iotlb_misses == 0);
    CHECK(d.stats().mapped_pages == 0);
  }
  CHECK(std::string(to_string(iommu_mode::translating)) == "translating");
}

TEST_CASE("iommu: map keeps the page offset and translates back", "[iommu]") {
  iommu_domain d(translating());
  auto iova = d.map(0x10'0000 + 0x123, 64);
  REQUIRE(iova);
  CHECK(*iova % k_page == 0x123);        // offset within the page kept
  CHECK(*iova >= d.params().iova_base);  // IOVAs come from the allocator's range
  CHECK(*iova != 0x10'0000u + 0x123);    // not the identity
  auto t = d.translate(*iova, true);
  CHECK(t.ok);
  CHECK(t.address == 0x10'0000u + 0x123);
  CHECK(d.translate(*iova + 0x10, false).address == 0x10'0000u + 0x133);
  CHECK(d.stats().mapped_pages == 1);
  CHECK(d.stats().maps == 1);
}

TEST_CASE("iommu: a multi-page range maps page by page onto contiguous memory", "[iommu]") {
  iommu_domain d(translating());
  const uint64_t phys = 0x4000'0000 + 0x800;  // 3 pages touched by 2 pages' worth of bytes
  auto iova = d.map(phys, 2 * k_page);
  REQUIRE(iova);
  CHECK(d.stats().mapped_pages == 3);
  for (uint64_t off : {uint64_t(0), k_page - 0x800, k_page, 2 * k_page - 1}) {
    auto t = d.translate(*iova + off, false);
    CHECK(t.ok);
    CHECK(t.address == phys + off);
  }
  // Past the end of the last page touched: not mapped.
  CHECK_FALSE(d.translate(*iova - 0x800 + 3 * k_page, false).ok);
  // A second mapping never overlaps the first one's IOVA range.
  auto iova2 = d.map(0x8000'0000, k_page);
  REQUIRE(iova2);
  CHECK(*iova2 >= *iova - 0x800 + 3 * k_page);
}

TEST_CASE("iommu: unmap then access faults", "[iommu]") {
  // docs/design.md, "Topology classes" and principle 8: a blocked DMA is counted, never an
  // abort.
  iommu_domain d(translating());
  auto iova = d.map(0x20'0000, 2 * k_page);
  REQUIRE(iova);
  CHECK(d.translate(*iova, true).ok);
  CHECK(d.unmap(*iova, 2 * k_page));
  CHECK(d.stats().mapped_pages == 0);
  CHECK(d.stats().unmaps == 1);
  auto t = d.translate(*iova, true);
  CHECK_FALSE(t.ok);
  CHECK_FALSE(t.iotlb_hit);  // the IOTLB entry went with the mapping
  CHECK(d.stats().faults == 1);
  CHECK_FALSE(d.unmap(*iova, k_page));  // already unmapped: refused, nothing changes
  // A never-mapped IOVA faults too.
  CHECK_FALSE(d.translate(0x7000'0000'0000, false).ok);
  CHECK(d.stats().faults == 2);
}

TEST_CASE("iommu: partial unmap leaves the rest mapped", "[iommu]") {
  iommu_domain d(translating());
  auto iova = d.map(0x100'0000, 4 * k_page);
  REQUIRE(iova);
  CHECK(d.unmap(*iova + k_page, 2 * k_page));  // the middle two pages
  CHECK(d.stats().mapped_pages == 2);
  CHECK(d.translate(*iova, false).address == 0x100'0000u);
  CHECK_FALSE(d.translate(*iova + k_page, false).ok);
  CHECK_FALSE(d.translate(*iova + 2 * k_page, false).ok);
  CHECK(d.translate(*iova + 3 * k_page + 5, false).address == 0x100'0000u + 3 * k_page + 5);
  // A range with a hole in it is not unmapped at all.
  CHECK_FALSE(d.unmap(*iova, 4 * k_page));
  CHECK(d.stats().mapped_pages == 2);
}

TEST_CASE("iommu: freed IOVA is reused only once unmapped", "[iommu]") {
  iommu_domain d(translating());
  auto a = d.map(0x1000'0000, k_page);
  auto b = d.map(0x2000'0000, k_page);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(*a != *b);
  CHECK(d.unmap(*a, k_page));
  auto c = d.map(0x3000'0000, k_page);  // may take a's old range, never b's
  REQUIRE(c);
  CHECK(*c != *b);
  CHECK(d.translate(*b, false).address == 0x2000'0000u);
  CHECK(d.translate(*c, false).address == 0x3000'0000u);
}

TEST_CASE("iommu: read and write permissions", "[iommu]") {
  iommu_domain d(translating());
  auto ro = d.map(0x1'0000, k_page, true, false);  // DMA_TO_DEVICE: the device only reads
  auto wo = d.map(0x2'0000, k_page, false, true);  // DMA_FROM_DEVICE: it only writes
  REQUIRE(ro);
  REQUIRE(wo);
  CHECK(d.translate(*ro, false).ok);
  CHECK_FALSE(d.translate(*ro, true).ok);
  CHECK(d.translate(*wo, true).ok);
  CHECK_FALSE(d.translate(*wo, false).ok);
  CHECK(d.stats().faults == 2);
}

TEST_CASE("iommu: IOTLB hits and misses", "[iommu]") {
  iommu_domain d(translating(4));
  auto iova = d.map(0x100'0000, 2 * k_page);
  REQUIRE(iova);
  CHECK_FALSE(d.translate(*iova, true).iotlb_hit);  // first touch walks the tables
  CHECK(d.translate(*iova + 8, true).iotlb_hit);
  CHECK(d.translate(*iova + 100, false).iotlb_hit);
  CHECK_FALSE(d.translate(*iova + k_page, true).iotlb_hit);  // another page
  CHECK(d.translate(*iova + k_page, true).iotlb_hit);
  const auto& s = d.stats();
  CHECK(s.translations == 5);
  CHECK(s.iotlb_hits == 3);
  CHECK(s.iotlb_misses == 2);
  CHECK(s.iotlb_evictions == 0);
  CHECK(s.faults == 0);
}

TEST_CASE("iommu: the IOTLB evicts the least recently used page", "[iommu]") {
  iommu_domain d(translating(2));
  auto iova = d.map(0, 3 * k_page);
  REQUIRE(iova);
  const uint64_t p0 = *iova, p1 = *iova + k_page, p2 = *iova + 2 * k_page;
  CHECK_FALSE(d.translate(p0, false).iotlb_hit);
  CHECK_FALSE(d.translate(p1, false).iotlb_hit);
  CHECK(d.translate(p0, false).iotlb_hit);        // p0 is now the most recent
  CHECK_FALSE(d.translate(p2, false).iotlb_hit);  // evicts p1, the least recent
  CHECK(d.stats().iotlb_evictions == 1);
  CHECK(d.translate(p0, false).iotlb_hit);
  CHECK_FALSE(d.translate(p1, false).iotlb_hit);  // evicts p2
  CHECK(d.stats().iotlb_evictions == 2);
  CHECK(d.stats().iotlb_misses == 4);
  CHECK(d.stats().iotlb_hits == 2);
}

TEST_CASE("iommu: without an IOTLB every access walks", "[iommu]") {
  iommu_domain d(translating(0));
  auto iova = d.map(0x5000, 16);
  REQUIRE(iova);
  for (int i = 0; i < 3; ++i) CHECK_FALSE(d.translate(*iova, true).iotlb_hit);
  CHECK(d.stats().iotlb_misses == 3);
  CHECK(d.stats().iotlb_evictions == 0);
}

TEST_CASE("iommu: IOVA space limits and bad arguments", "[iommu]") {
  iommu_params p = translating();
  p.iova_base = 1ull << 32;
  p.iova_limit = (1ull << 32) + 4 * k_page;
  iommu_domain d(p);
  CHECK_FALSE(d.map(0, 0));  // nothing to map
  auto a = d.map(0, 3 * k_page);
  REQUIRE(a);
  CHECK(*a == 1ull << 32);
  CHECK_FALSE(d.map(0, 2 * k_page));  // only one page left
  CHECK(d.map(0, k_page));
  CHECK_FALSE(d.unmap(*a, 0));
  CHECK(d.unmap(*a, 3 * k_page));
  CHECK(d.map(0, 3 * k_page) == 1ull << 32);  // freed space is handed out again
  iommu_params bad = translating();
  bad.page_bytes = 2048;
  CHECK_THROWS_AS(iommu_domain(bad), std::invalid_argument);
  bad.page_bytes = 3 * 4096;
  CHECK_THROWS_AS(iommu_domain(bad), std::invalid_argument);
}

TEST_CASE("iommu: large pages", "[iommu]") {
  iommu_params p = translating();
  p.page_bytes = 2ull << 20;  // 2 MiB I/O pages
  iommu_domain d(p);
  auto iova = d.map(0x40'0000 + 0x1234, 100);
  REQUIRE(iova);
  CHECK(*iova % (2ull << 20) == 0x1234);
  CHECK(d.translate(*iova, true).address == 0x40'0000u + 0x1234);
  CHECK(d.translate(*iova - 0x1234 + 0x1f'ffff, true).ok);  // same 2 MiB page
  CHECK(d.stats().iotlb_misses == 1);
  CHECK(d.stats().mapped_pages == 1);
}
