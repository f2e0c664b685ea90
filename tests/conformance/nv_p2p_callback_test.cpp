// The free callback (GPUDirect RDMA 13.3, 5.3 Unpin Callback, 6.4) and misuse the driver
// model detects, reports and refuses.
#include <catch2/catch.hpp>

#include "tests/conformance/nv_p2p_fixture.h"

using namespace p2psim;
using test::callback_state;
using test::k64;
using test::p2p_world;

namespace {

bool reported(const nv::nvidia_driver& d, const std::string& words) {
  for (const auto& e : d.events())
    if ((e.what + ": " + e.detail).find(words) != std::string::npos) return true;
  return false;
}

callback_state watched(p2p_world& w) {
  callback_state s;
  s.bar1 = w.bar1[0];
  s.bar1_base = p2p_world::bar1_base;
  return s;
}
}  // namespace

TEST_CASE("5.3: cuMemFree runs the callback synchronously before BAR1 is torn down",
          "[nv-p2p][callback]") {
  p2p_world w;
  uint64_t va = w.alloc(2 * k64);
  callback_state s = watched(w);
  REQUIRE(nvidia_p2p_get_pages(0, 0, va, 2 * k64, &s.table, test::record_callback, &s) == 0);
  REQUIRE(w.bar1[0]->mapped_pages() == 2);
  REQUIRE(w.driver.mem_free(100, va));
  CHECK(s.calls == 1);                    // ran inside cuMemFree
  CHECK(s.bar1_mapped_inside);            // the mapping was still there while it ran
  CHECK(w.bar1[0]->mapped_pages() == 0);  // and is gone after it returned
  CHECK(w.driver.counters().callbacks == 1);
  CHECK_FALSE(reported(w.driver, "leaked"));
}

TEST_CASE("5.3: destroying the context runs the callback", "[nv-p2p][callback]") {
  p2p_world w;
  uint64_t va = w.alloc(k64);
  callback_state s = watched(w);
  REQUIRE(nvidia_p2p_get_pages(0, 0, va, k64, &s.table, test::record_callback, &s) == 0);
  REQUIRE(w.driver.destroy_context(100, w.context(100)));
  CHECK(s.calls == 1);
  CHECK(w.bar1[0]->mapped_pages() == 0);
}

TEST_CASE("5.3: an early exit of the process runs the callback", "[nv-p2p][callback]") {
  p2p_world w;
  uint64_t va = w.alloc(k64);
  callback_state s = watched(w);
  REQUIRE(nvidia_p2p_get_pages(0, 0, va, k64, &s.table, test::record_callback, &s) == 0);
  w.driver.process_exit(100);
  CHECK(s.calls == 1);
  CHECK(w.bar1[0]->mapped_pages() == 0);
}

TEST_CASE("5.3 (R535 nv-p2p.c): after the callback the driver frees the page table itself",
          "[nv-p2p][callback]") {
  p2p_world w;
  uint64_t va = w.alloc(k64);
  callback_state s = watched(w);
  s.free_table = false;  // a callback that forgets nvidia_p2p_free_page_table leaks nothing
  REQUIRE(nvidia_p2p_get_pages(0, 0, va, k64, &s.table, test::record_callback, &s) == 0);
  REQUIRE(w.driver.mem_free(100, va));
  CHECK(s.calls == 1);
  CHECK(w.driver.live_pins() == 0);
  CHECK(w.bar1[0]->mapped_pages() == 0);
}

TEST_CASE("7.3 (R535 nv-p2p.c): put_pages from inside the callback returns 0 and is reported",
          "[nv-p2p][misuse]") {
  p2p_world w;
  uint64_t va = w.alloc(k64);
  callback_state s = watched(w);
  s.try_put_pages = true;
  REQUIRE(nvidia_p2p_get_pages(0, 0, va, k64, &s.table, test::record_callback, &s) == 0);
  REQUIRE(w.driver.mem_free(100, va));
  CHECK(s.put_pages_result == 0);
  CHECK(reported(w.driver, "inside its own free callback"));
  CHECK(w.bar1[0]->mapped_pages() == 0);  // torn down once, by the driver
  CHECK(w.driver.counters().unpins == 0);
}

TEST_CASE("6.3: put_pages from another process without tokens releases nothing",
          "[nv-p2p][misuse]") {
  p2p_world w;
  uint64_t va = w.alloc(k64);
  nvidia_p2p_page_table_t* t = nullptr;
  REQUIRE(nvidia_p2p_get_pages(
              0, 0, va, k64, &t, [](void*) {}, nullptr) == 0);
  {
    kernel::as_process other(200);
    CHECK(nvidia_p2p_put_pages(0, 0, va, t) == 0);  // p2p.c looks in the caller's VA spaces
  }
  CHECK(reported(w.driver, "process 200"));
  CHECK(w.driver.live_pins() == 1);
  CHECK(w.bar1[0]->mapped_pages() == 1);
  CHECK(nvidia_p2p_put_pages(0, 0, va, t) == 0);
  CHECK(w.driver.live_pins() == 0);
}

TEST_CASE("4.2 (R535 nv-p2p.c): a double put returns 0 and a dead table maps nothing",
          "[nv-p2p][misuse]") {
  p2p_world w;
  uint64_t va = w.alloc(k64);
  nvidia_p2p_page_table_t* t = nullptr;
  REQUIRE(nvidia_p2p_get_pages(
              0, 0, va, k64, &t, [](void*) {}, nullptr) == 0);
  REQUIRE(nvidia_p2p_put_pages(0, 0, va, t) == 0);
  CHECK(nvidia_p2p_put_pages(0, 0, va, t) == 0);
  CHECK(reported(w.driver, "late"));
  CHECK(nvidia_p2p_free_page_table(t) == 0);  // a no-op since R535
  nvidia_p2p_dma_mapping_t* m = nullptr;
  pci_dev nic{"nic0", 0x0400, nullptr};
  CHECK(nvidia_p2p_dma_map_pages(&nic, t, &m) == -EINVAL);
  CHECK(w.driver.counters().unpins == 1);
  CHECK(w.bar1[0]->mapped_pages() == 0);
}

TEST_CASE("4.2 (R535 nv-p2p.c): put_pages after the callback revoked the mapping returns 0",
          "[nv-p2p][misuse]") {
  p2p_world w;
  uint64_t va = w.alloc(k64);
  callback_state s = watched(w);
  REQUIRE(nvidia_p2p_get_pages(0, 0, va, k64, &s.table, test::record_callback, &s) == 0);
  REQUIRE(w.driver.mem_free(100, va));
  CHECK(nvidia_p2p_put_pages(0, 0, va, s.table) == 0);
  CHECK(reported(w.driver, "late"));
  CHECK(w.driver.counters().unpins == 0);
}

TEST_CASE("4.2 (R535 nv-p2p.c): put_pages(NULL) returns 0", "[nv-p2p][misuse]") {
  p2p_world w;
  CHECK(nvidia_p2p_put_pages(0, 0, 0, nullptr) == 0);
  CHECK(nvidia_p2p_put_pages_persistent(0, nullptr, 0) == 0);
}

TEST_CASE("5.3: free_page_table outside the callback leaves a live mapping alone",
          "[nv-p2p][misuse]") {
  p2p_world w;
  uint64_t va = w.alloc(k64);
  nvidia_p2p_page_table_t* t = nullptr;
  REQUIRE(nvidia_p2p_get_pages(
              0, 0, va, k64, &t, [](void*) {}, nullptr) == 0);
  CHECK(nvidia_p2p_free_page_table(t) == 0);  // a no-op since R535
  CHECK(reported(w.driver, "outside a free callback"));
  CHECK(w.bar1[0]->mapped_pages() == 1);  // still pinned
  CHECK(w.driver.live_pins() == 1);
}
