// BAR1 aperture page table: 64 KiB pages (GPUDirect RDMA 13.3, 5.2 and 6.2), the first
// `reserved` bytes kept by the driver (5.5: 32 MB of a 256 MB BAR1 on Kepler; docs/design.md,
// "Calibration figures").
#include <catch2/catch.hpp>

#include <stdexcept>

#include "models/gpu/bar1_page_table.h"

using p2psim::gpu::bar1_page_bytes;
using p2psim::gpu::bar1_page_table;

namespace {

constexpr uint64_t k_mib = 1ull << 20;
constexpr uint64_t k_page = 64 * 1024;

bar1_page_table kepler() {
  return bar1_page_table(256 * k_mib, 32 * k_mib);
}

}  // namespace

TEST_CASE("bar1: a 256 MiB BAR1 with 32 MiB reserved", "[gpu][bar1]") {
  const bar1_page_table t = kepler();
  CHECK(bar1_page_bytes == k_page);
  CHECK(t.size() == 256 * k_mib);
  CHECK(t.pages() == 4096);
  CHECK(t.reserved() == 32 * k_mib);  // 512 pages
  CHECK(t.reserved() / k_page == 512);
  CHECK(t.mapped_pages() == 0);
  CHECK(t.free_pages() == 4096 - 512);
  // Nothing translates until it is mapped, reserved region included.
  CHECK_FALSE(t.translate(0).has_value());
  CHECK_FALSE(t.translate(100 * k_mib).has_value());
}

TEST_CASE("bar1: find_free skips reserved and mapped pages", "[gpu][bar1]") {
  bar1_page_table t = kepler();
  CHECK(t.find_free(1) == 512u);  // the first page after the driver's 32 MiB
  CHECK(t.find_free(16) == 512u);
  t.map(512, 2, 0);
  CHECK(t.find_free(1) == 514u);
  // A hole of 3 pages at 514..516, then a mapped page at 517.
  t.map(517, 1, 10 * k_page);
  CHECK(t.find_free(3) == 514u);
  CHECK(t.find_free(4) == 518u);
  CHECK(t.find_free(4096 - 518) == 518u);  // exactly what is left at the top
  CHECK_FALSE(t.find_free(4096 - 517).has_value());
  CHECK_FALSE(t.find_free(0).has_value());
}

TEST_CASE("bar1: map, translate, unmap", "[gpu][bar1]") {
  bar1_page_table t = kepler();
  const uint64_t vram = 3ull << 30;  // 3 GiB into VRAM
  t.map(600, 4, vram);
  CHECK(t.mapped_pages() == 4);
  CHECK(t.free_pages() == 4096 - 512 - 4);
  // Each BAR1 page maps onto the matching 64 KiB page of VRAM; the offset inside is kept.
  CHECK(t.translate(600 * k_page) == vram);
  CHECK(t.translate(600 * k_page + 0x1234) == vram + 0x1234);
  CHECK(t.translate(603 * k_page + k_page - 1) == vram + 4 * k_page - 1);
  CHECK(t.translate(602 * k_page + 8) == vram + 2 * k_page + 8);
  CHECK_FALSE(t.translate(599 * k_page + k_page - 1).has_value());
  CHECK_FALSE(t.translate(604 * k_page).has_value());
  CHECK_FALSE(t.translate(256 * k_mib).has_value());  // beyond the aperture
  CHECK_FALSE(t.translate(~0ull).has_value());

  t.unmap(601, 2);
  CHECK(t.mapped_pages() == 2);
  CHECK(t.translate(600 * k_page) == vram);
  CHECK_FALSE(t.translate(601 * k_page).has_value());
  CHECK_FALSE(t.translate(602 * k_page).has_value());
  CHECK(t.translate(603 * k_page) == vram + 3 * k_page);
  CHECK(t.find_free(2) == 512u);
  t.unmap(600, 1);
  t.unmap(603, 1);
  CHECK(t.mapped_pages() == 0);
  CHECK(t.free_pages() == 4096 - 512);
  // Pages can be mapped again once unmapped, onto other VRAM.
  t.map(600, 1, 0);
  CHECK(t.translate(600 * k_page + 5) == 5u);
}

TEST_CASE("bar1: invalid mappings throw", "[gpu][bar1]") {
  bar1_page_table t = kepler();
  CHECK_THROWS_AS(t.map(0, 1, 0), std::out_of_range);           // reserved by the driver
  CHECK_THROWS_AS(t.map(511, 2, 0), std::out_of_range);         // straddles the reserved end
  CHECK_THROWS_AS(t.map(4095, 2, 0), std::out_of_range);        // runs off the aperture
  CHECK_THROWS_AS(t.map(512, 1, 4096), std::invalid_argument);  // VRAM not 64 KiB aligned
  CHECK(t.mapped_pages() == 0);
  t.map(700, 3, 0);
  CHECK_THROWS_AS(t.map(702, 2, 8 * k_page), std::logic_error);  // page 702 mapped twice
  CHECK_THROWS_AS(t.map(700, 1, 0), std::logic_error);
  CHECK(t.mapped_pages() == 3);
  CHECK_FALSE(t.translate(703 * k_page).has_value());  // the refused map left nothing behind
  CHECK(t.translate(702 * k_page) == 2 * k_page);
  CHECK_THROWS_AS(t.unmap(699, 1), std::logic_error);  // not mapped
  CHECK_THROWS_AS(t.unmap(4095, 2), std::out_of_range);
  CHECK(t.mapped_pages() == 3);
}

TEST_CASE("bar1: exhaustion", "[gpu][bar1]") {
  bar1_page_table t = kepler();
  const uint64_t usable = 4096 - 512;
  auto first = t.find_free(usable);
  REQUIRE(first == 512u);
  t.map(*first, usable, 0);
  CHECK(t.free_pages() == 0);
  CHECK(t.mapped_pages() == usable);
  CHECK_FALSE(t.find_free(1).has_value());
  t.unmap(1000, 1);
  CHECK(t.find_free(1) == 1000u);
  CHECK_FALSE(t.find_free(2).has_value());
}

TEST_CASE("bar1: construction", "[gpu][bar1]") {
  // A reserved size that is not a page multiple rounds up to whole pages.
  bar1_page_table t(16 * k_mib, k_page + 1);
  CHECK(t.pages() == 256);
  CHECK(t.reserved() == 2 * k_page);
  CHECK(t.find_free(1) == 2u);
  bar1_page_table none(k_page * 4, 0);
  CHECK(none.find_free(4) == 0u);
  CHECK_THROWS_AS(bar1_page_table(256 * k_mib + 4096, 0), std::invalid_argument);
  CHECK_THROWS_AS(bar1_page_table(256 * k_mib, 256 * k_mib), std::invalid_argument);
  CHECK_THROWS_AS(bar1_page_table(0, 0), std::invalid_argument);
}

TEST_CASE("bar1: the driver maps its own pages in the reserved region only", "[gpu][bar1]") {
  // 1 MiB BAR1 (16 pages), the first 4 reserved: a peer copy's window lives there and takes
  // nothing from the pages handed out to pins.
  bar1_page_table t(1 << 20, 4 * bar1_page_bytes);
  t.map_reserved(2, 5 * bar1_page_bytes);
  CHECK(t.translate(2 * bar1_page_bytes + 100) == 5 * bar1_page_bytes + 100);
  CHECK(t.free_pages() == 12);
  CHECK(t.mapped_pages() == 0);
  CHECK_THROWS_AS(t.map_reserved(2, 0), std::logic_error);         // already mapped
  CHECK_THROWS_AS(t.map_reserved(4, 0), std::out_of_range);        // a usable page
  CHECK_THROWS_AS(t.map_reserved(1, 100), std::invalid_argument);  // not page aligned
  t.unmap_reserved(2);
  CHECK_FALSE(t.translate(2 * bar1_page_bytes).has_value());
  CHECK_THROWS_AS(t.unmap_reserved(2), std::logic_error);  // not mapped
  CHECK_THROWS_AS(t.map(3, 1, 0), std::out_of_range);      // pins stay out of it
}
