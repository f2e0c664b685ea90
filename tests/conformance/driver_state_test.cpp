// What the NVIDIA driver model keeps between calls: live pins, contexts and processes only,
// so that a long simulation's pins and contexts cost what is live, not what came before
// (`p2psim bench --pins` times it; docs/benchmarks.md). Late calls on dead page tables are
// still recognised, from a bounded quarantine.
#include <catch2/catch.hpp>

#include "models/driver/cuda/cuda.h"
#include "tests/conformance/nv_p2p_fixture.h"

using namespace p2psim;
using test::k64;
using test::p2p_world;

TEST_CASE("driver state: destroyed contexts leave nothing behind", "[nv-p2p][state]") {
  p2p_world w;
  for (int i = 0; i < 100; ++i) {
    const int ctx = w.driver.create_context(100, 0);
    REQUIRE(w.driver.mem_alloc(ctx, k64).has_value());
    REQUIRE(w.driver.destroy_context(100, ctx));
    CHECK(w.driver.find_context(ctx) == nullptr);
    CHECK_FALSE(w.driver.destroy_context(100, ctx));  // a stale id stays stale
  }
  CHECK(w.driver.live_contexts() == 0);
}

TEST_CASE("driver state: an exited process leaves nothing behind, its persistent pins stay",
          "[nv-p2p][state]") {
  p2p_world w;
  const int ctx = w.context(7);
  const uint64_t va = *w.driver.mem_alloc(ctx, 2 * k64);
  nvidia_p2p_page_table_t *revocable = nullptr, *persistent = nullptr;
  test::callback_state cb;
  {
    kernel::as_process as(7);
    REQUIRE(nvidia_p2p_get_pages(0, 0, va, k64, &revocable, test::record_callback, &cb) == 0);
    cb.table = revocable;
    REQUIRE(nvidia_p2p_get_pages_persistent(va + k64, k64, &persistent, 0) == 0);
  }
  w.driver.process_exit(7);
  CHECK(cb.calls == 1);
  CHECK(w.driver.live_contexts() == 0);
  CHECK(w.driver.known_processes() == 0);
  CHECK(w.driver.live_pins() == 1);  // the persistent pin outlives the process (4.2)
  {
    kernel::as_process as(7);
    CHECK(nvidia_p2p_put_pages_persistent(va + k64, persistent, 0) == 0);
  }
  CHECK(w.driver.live_pins() == 0);
  CHECK(w.driver.known_processes() == 0);
}

TEST_CASE("driver state: pinning in a process the driver does not know creates nothing",
          "[nv-p2p][state]") {
  p2p_world w;
  nvidia_p2p_page_table_t* t = nullptr;
  kernel::as_process as(4242);
  CHECK(nvidia_p2p_get_pages(0, 0, 0x2'0000'0000ull, k64, &t, test::ignore_callback, nullptr) ==
        -EINVAL);
  CHECK(w.driver.known_processes() == 0);
}

TEST_CASE("driver state: thousands of pin cycles keep no pin, and late calls still tolerated",
          "[nv-p2p][state]") {
  p2p_world w;
  const uint64_t va = w.alloc(k64);
  nvidia_p2p_page_table_t* first = nullptr;
  for (int i = 0; i < 10'000; ++i) {
    nvidia_p2p_page_table_t* t = nullptr;
    REQUIRE(nvidia_p2p_get_pages(0, 0, va, k64, &t, test::ignore_callback, nullptr) == 0);
    if (!first) first = t;
    REQUIRE(nvidia_p2p_put_pages(0, 0, va, t) == 0);
  }
  CHECK(w.driver.live_pins() == 0);
  CHECK(w.driver.counters().pins == 10'000);
  CHECK(w.driver.events().empty());
  // A late release of a table long out of quarantine is still answered 0, as R535 does.
  CHECK(nvidia_p2p_put_pages(0, 0, va, first) == 0);
  CHECK(w.driver.counters().misuse == 1);
}
