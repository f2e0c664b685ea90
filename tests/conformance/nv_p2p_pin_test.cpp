// nvidia_p2p_get_pages / put_pages: arguments, BAR1 accounting and sharing, pinning time.
#include <catch2/catch.hpp>

#include "tests/conformance/nv_p2p_fixture.h"

using namespace p2psim;
using test::k64;
using test::p2p_world;

TEST_CASE("7.3 and 6.2: address and length must be 64 KiB aligned and length non-zero",
          "[nv-p2p]") {
  p2p_world w;
  uint64_t va = w.alloc(4 * k64);
  nvidia_p2p_page_table_t* t = nullptr;
  CHECK(nvidia_p2p_get_pages(0, 0, va + 4096, k64, &t, test::ignore_callback, nullptr) == -EINVAL);
  CHECK(nvidia_p2p_get_pages(0, 0, va, k64 + 1, &t, test::ignore_callback, nullptr) == -EINVAL);
  CHECK(nvidia_p2p_get_pages(0, 0, va, 0, &t, test::ignore_callback, nullptr) == -EINVAL);
  CHECK(nvidia_p2p_get_pages(0, 0, va, k64, nullptr, test::ignore_callback, nullptr) == -EINVAL);
  CHECK(t == nullptr);
  CHECK(w.driver.counters().refused == 4);
  REQUIRE(nvidia_p2p_get_pages(0, 0, va, 4 * k64, &t, test::ignore_callback, nullptr) == 0);
  CHECK(t->entries == 4);
}

TEST_CASE("7.3: the page table has the documented version, page size and GPU UUID", "[nv-p2p]") {
  p2p_world w;
  uint64_t va = w.alloc(2 * k64);
  nvidia_p2p_page_table_t* t = nullptr;
  REQUIRE(nvidia_p2p_get_pages(0, 0, va, 2 * k64, &t, test::ignore_callback, nullptr) == 0);
  CHECK(NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE(t));
  CHECK(t->page_size == NVIDIA_P2P_PAGE_SIZE_64KB);
  CHECK(t->gpu_uuid[0] == 0x10);  // the fixture's UUID of GPU 0
  for (uint32_t i = 0; i < t->entries; ++i) {
    uint64_t pa = t->pages[i]->physical_address;
    CHECK(pa % k64 == 0);
    CHECK(pa >= p2p_world::bar1_base + p2p_world::reserved_bytes);  // never the reserved region
    CHECK(pa < p2p_world::bar1_base + p2p_world::bar1_bytes);
  }
  // The BAR1 pages really lead to the allocation's VRAM.
  auto vram = w.driver.vram_of(100, va + k64 + 5);
  auto via_bar1 = w.bar1[0]->translate(t->pages[1]->physical_address + 5 - p2p_world::bar1_base);
  REQUIRE(vram);
  REQUIRE(via_bar1);
  CHECK(*via_bar1 == vram->second);
}

TEST_CASE("4.2: a NULL free callback is rejected since R535", "[nv-p2p]") {
  p2p_world w;
  uint64_t va = w.alloc(k64);
  nvidia_p2p_page_table_t* t = nullptr;
  CHECK(nvidia_p2p_get_pages(0, 0, va, k64, &t, nullptr, nullptr) == -EINVAL);
  CHECK(w.bar1[0]->mapped_pages() == 0);
}

TEST_CASE("4.2: before R535 a NULL callback gave a persistent mapping (model switch)", "[nv-p2p]") {
  nv::driver_config old;
  old.accept_null_callback = true;
  p2p_world w(1, old);
  uint64_t va = w.alloc(k64);
  nvidia_p2p_page_table_t* t = nullptr;
  REQUIRE(nvidia_p2p_get_pages(0, 0, va, k64, &t, nullptr, nullptr) == 0);
  CHECK(w.driver.counters().persistent_pins == 1);
  CHECK(w.driver.mem_free(100, va));
  CHECK(w.driver.counters().callbacks == 0);  // nothing to call: persistent
  CHECK(nvidia_p2p_put_pages_persistent(va, t, 0) == 0);
}

TEST_CASE("5.5: BAR1 is exhausted exactly at (BAR1 size - reserved) / 64 KiB pages", "[nv-p2p]") {
  p2p_world w;
  const uint64_t pages = p2p_world::usable_pages;  // 224 MiB / 64 KiB = 3584
  REQUIRE(pages == 3584);
  std::vector<uint64_t> vas;
  for (uint64_t i = 0; i <= pages; ++i) vas.push_back(w.alloc(k64));
  nvidia_p2p_page_table_t* t = nullptr;
  for (uint64_t i = 0; i < pages; ++i) {
    INFO("page " << i);
    REQUIRE(nvidia_p2p_get_pages(0, 0, vas[i], k64, &t, test::ignore_callback, nullptr) == 0);
  }
  CHECK(w.bar1[0]->free_pages() == 0);
  CHECK(nvidia_p2p_get_pages(0, 0, vas[pages], k64, &t, test::ignore_callback, nullptr) == -ENOMEM);
  CHECK(w.driver.bar1_used_bytes(0) == p2p_world::bar1_bytes);
}

TEST_CASE("5.5: a pin that does not fit leaves no partial mapping", "[nv-p2p]") {
  p2p_world w;
  uint64_t big = w.alloc((p2p_world::usable_pages + 1) * k64);
  nvidia_p2p_page_table_t* t = nullptr;
  CHECK(nvidia_p2p_get_pages(0, 0, big, (p2p_world::usable_pages + 1) * k64, &t,
                             test::ignore_callback, nullptr) == -ENOMEM);
  CHECK(w.bar1[0]->mapped_pages() == 0);
  CHECK(nvidia_p2p_get_pages(0, 0, big, p2p_world::usable_pages * k64, &t, test::ignore_callback,
                             nullptr) == 0);
}

TEST_CASE("4.7: overlapping and duplicate pins share BAR1 pages (CUDA 7.0 and later)", "[nv-p2p]") {
  p2p_world w;
  uint64_t va = w.alloc(4 * k64);
  nvidia_p2p_page_table_t *a = nullptr, *b = nullptr, *c = nullptr;
  REQUIRE(nvidia_p2p_get_pages(0, 0, va, 4 * k64, &a, test::ignore_callback, nullptr) == 0);
  REQUIRE(nvidia_p2p_get_pages(0, 0, va, 4 * k64, &b, test::ignore_callback, nullptr) ==
          0);  // duplicate
  REQUIRE(nvidia_p2p_get_pages(0, 0, va + 2 * k64, 2 * k64, &c, test::ignore_callback, nullptr) ==
          0);  // overlap
  CHECK(w.bar1[0]->mapped_pages() == 4);
  CHECK(a->pages[2]->physical_address == c->pages[0]->physical_address);
  // Unpinning returns only the pages no other pin shares.
  REQUIRE(nvidia_p2p_put_pages(0, 0, va, a) == 0);
  CHECK(w.bar1[0]->mapped_pages() == 4);
  REQUIRE(nvidia_p2p_put_pages(0, 0, va, b) == 0);
  CHECK(w.bar1[0]->mapped_pages() == 2);
  REQUIRE(nvidia_p2p_put_pages(0, 0, va + 2 * k64, c) == 0);
  CHECK(w.bar1[0]->mapped_pages() == 0);
}

TEST_CASE("5.2: two buffers in one 64 KiB page get the same BAR mapping", "[nv-p2p]") {
  p2p_world w;
  uint64_t x = w.alloc(1000), y = w.alloc(1000);
  REQUIRE(x / k64 == y / k64);  // small allocations are packed into one GPU page
  nvidia_p2p_page_table_t *a = nullptr, *b = nullptr;
  REQUIRE(nvidia_p2p_get_pages(0, 0, x & ~(k64 - 1), k64, &a, test::ignore_callback, nullptr) == 0);
  REQUIRE(nvidia_p2p_get_pages(0, 0, y & ~(k64 - 1), k64, &b, test::ignore_callback, nullptr) == 0);
  CHECK(a->pages[0]->physical_address == b->pages[0]->physical_address);
  CHECK(w.bar1[0]->mapped_pages() == 1);
}

TEST_CASE("4.8: the CUDA 6.0 model allocates new BAR1 space for every pin", "[nv-p2p]") {
  nv::driver_config cuda6;
  cuda6.share_bar1 = false;
  p2p_world w(1, cuda6);
  uint64_t va = w.alloc(2 * k64);
  nvidia_p2p_page_table_t *a = nullptr, *b = nullptr;
  REQUIRE(nvidia_p2p_get_pages(0, 0, va, 2 * k64, &a, test::ignore_callback, nullptr) == 0);
  REQUIRE(nvidia_p2p_get_pages(0, 0, va, 2 * k64, &b, test::ignore_callback, nullptr) == 0);
  CHECK(w.bar1[0]->mapped_pages() == 4);
  CHECK(a->pages[0]->physical_address != b->pages[0]->physical_address);
  REQUIRE(nvidia_p2p_put_pages(0, 0, va, a) == 0);
  CHECK(w.bar1[0]->mapped_pages() == 2);
}

TEST_CASE("5.1: pinning takes simulated time, per call and per page", "[nv-p2p]") {
  nv::driver_config cfg;
  cfg.pin_base_ns = 20'000;
  cfg.pin_page_ns = 2'000;
  p2p_world w(1, cfg);
  uint64_t va = w.alloc(8 * k64);
  w.driver.take_elapsed_ns();
  nvidia_p2p_page_table_t* t = nullptr;
  REQUIRE(nvidia_p2p_get_pages(0, 0, va, 8 * k64, &t, test::ignore_callback, nullptr) == 0);
  CHECK(w.driver.take_elapsed_ns() == Approx(20'000 + 8 * 2'000));
  CHECK(w.driver.take_elapsed_ns() == 0);
}

TEST_CASE("4.2: persistent mappings take no callback and are released explicitly", "[nv-p2p]") {
  p2p_world w;
  uint64_t va = w.alloc(2 * k64);
  nvidia_p2p_page_table_t* t = nullptr;
  CHECK(nvidia_p2p_get_pages_persistent(va, 2 * k64, &t, 1) == -EINVAL);  // unknown flags
  REQUIRE(nvidia_p2p_get_pages_persistent(va, 2 * k64, &t, NVIDIA_P2P_FLAGS_DEFAULT) == 0);
  CHECK(nvidia_p2p_put_pages(0, 0, va, t) == 0);  // not the persistent release call: ignored
  CHECK(w.bar1[0]->mapped_pages() == 2);
  // Freeing the memory does not revoke it: the pages stay until the explicit release.
  CHECK(w.driver.mem_free(100, va));
  CHECK(w.driver.counters().callbacks == 0);
  CHECK(w.bar1[0]->mapped_pages() == 2);
  CHECK(nvidia_p2p_put_pages_persistent(va, t, 0) == 0);
  CHECK(w.bar1[0]->mapped_pages() == 0);
}
