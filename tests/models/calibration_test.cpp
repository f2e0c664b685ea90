// Platform presets reproduce the public figures they cite (docs/design.md, "Calibration
// figures").
#include <catch2/catch.hpp>

#include "tests/models/harness.h"

TEST_CASE("Sandy Bridge-EP host DMA read latency matches pcie-bench", "[calibration]") {
  auto r = p2psim::test::run_scenario("tests/data/scenarios/host_read_latency.yaml",
                                      {"link.nic0.width=8", "socket.cpu0.platform=sandy_bridge_ep",
                                       "socket.cpu1.platform=sandy_bridge_ep"});
  double local_ns = p2psim::test::transfer(r, "local").seconds * 1e9;
  double remote_ns = p2psim::test::transfer(r, "remote").seconds * 1e9;
  INFO("local " << local_ns << " ns, remote " << remote_ns << " ns");
  CHECK(local_ns == Approx(560).epsilon(0.02));  // median 560 ns (Sandy/Ivy Bridge, Gen3 x8)
  CHECK(remote_ns >= 653 * 0.98);                // remote socket 653-666 ns
  CHECK(remote_ns <= 666 * 1.02);
}
