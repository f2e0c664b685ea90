// nvidia_p2p_dma_map_pages (GPUDirect RDMA 13.3, 4.6, 5.4 IOMMUs, 7.3): identity bus
// addresses with the IOMMU off or in pass-through, I/O virtual addresses when it translates.
#include <catch2/catch.hpp>

#include "models/iommu/iommu.h"
#include "tests/conformance/nv_p2p_fixture.h"

using namespace p2psim;
using test::k64;
using test::p2p_world;

namespace {

struct pinned {
  p2p_world w;
  uint64_t va = w.alloc(2 * k64);
  nvidia_p2p_page_table_t* t = nullptr;
  pinned() {
    REQUIRE(nvidia_p2p_get_pages(
                0, 0, va, 2 * k64, &t, [](void*) {}, nullptr) == 0);
  }
};
}  // namespace

TEST_CASE("5.4: with no IOMMU the DMA addresses are the BAR1 physical addresses", "[dma-map]") {
  pinned p;
  pci_dev nic{"nic0", 0x0400, nullptr};
  nvidia_p2p_dma_mapping_t* m = nullptr;
  REQUIRE(nvidia_p2p_dma_map_pages(&nic, p.t, &m) == 0);
  CHECK(NVIDIA_P2P_DMA_MAPPING_VERSION_COMPATIBLE(m));
  CHECK(m->page_size_type == NVIDIA_P2P_PAGE_SIZE_64KB);
  REQUIRE(m->entries == 2);
  CHECK(m->dma_addresses[1] == p.t->pages[1]->physical_address);
  CHECK(m->pci_dev == &nic);
  CHECK(nvidia_p2p_dma_unmap_pages(&nic, p.t, m) == 0);
  CHECK(nvidia_p2p_dma_unmap_pages(&nic, p.t, m) == 0);  // twice: tolerated since R535 (4.2)
  CHECK(nvidia_p2p_dma_unmap_pages(nullptr, p.t, m) == -EINVAL);
}

TEST_CASE("5.4: a pass-through IOMMU gives identity addresses", "[dma-map]") {
  pinned p;
  iommu::iommu_params ip;
  ip.mode = iommu::iommu_mode::passthrough;
  iommu::iommu_domain dom(ip);
  pci_dev nic{"nic0", 0x0400, &dom};
  nvidia_p2p_dma_mapping_t* m = nullptr;
  REQUIRE(nvidia_p2p_dma_map_pages(&nic, p.t, &m) == 0);
  CHECK(m->dma_addresses[0] == p.t->pages[0]->physical_address);
}

TEST_CASE("4.6: a translating IOMMU gives I/O virtual addresses that lead to BAR1", "[dma-map]") {
  pinned p;
  iommu::iommu_params ip;
  ip.mode = iommu::iommu_mode::translating;
  iommu::iommu_domain dom(ip);
  pci_dev nic{"nic0", 0x0400, &dom};
  nvidia_p2p_dma_mapping_t* m = nullptr;
  REQUIRE(nvidia_p2p_dma_map_pages(&nic, p.t, &m) == 0);
  for (uint32_t i = 0; i < m->entries; ++i) {
    CHECK(m->dma_addresses[i] != p.t->pages[i]->physical_address);
    auto tr = dom.translate(m->dma_addresses[i] + 100, true);
    REQUIRE(tr.ok);
    CHECK(tr.address == p.t->pages[i]->physical_address + 100);
  }
  REQUIRE(nvidia_p2p_dma_unmap_pages(&nic, p.t, m) == 0);
  CHECK_FALSE(dom.translate(m->dma_addresses[0], true).ok);  // gone: a DMA would be blocked
}

TEST_CASE("7.3 (R535 nv-p2p.c): the driver frees the I/O mapping after the callback", "[dma-map]") {
  p2p_world w;
  uint64_t va = w.alloc(k64);
  iommu::iommu_params ip;
  ip.mode = iommu::iommu_mode::translating;
  iommu::iommu_domain dom(ip);
  static pci_dev nic{"nic0", 0x0400, nullptr};
  nic.iommu = &dom;
  struct state {
    nvidia_p2p_page_table_t* t = nullptr;
    nvidia_p2p_dma_mapping_t* m = nullptr;
    int freed = 1;
  } s;
  REQUIRE(nvidia_p2p_get_pages(
              0, 0, va, k64, &s.t,
              [](void* d) {
                auto* st = static_cast<state*>(d);
                st->freed = nvidia_p2p_free_dma_mapping(st->m);
                nvidia_p2p_free_page_table(st->t);
              },
              &s) == 0);
  REQUIRE(nvidia_p2p_dma_map_pages(&nic, s.t, &s.m) == 0);
  uint64_t iova = s.m->dma_addresses[0];
  CHECK(nvidia_p2p_free_dma_mapping(s.m) == 0);  // outside the callback: a no-op
  CHECK(dom.translate(iova, true).ok);           // still mapped
  REQUIRE(w.driver.mem_free(100, va));
  CHECK(s.freed == 0);
  CHECK_FALSE(dom.translate(iova, true).ok);
}
