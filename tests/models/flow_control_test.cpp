// Credit-based flow control (PCIe Base Spec 2.6.1): a transmitter sends only what the
// receiver's buffer has credits for, so a switch's ingress never holds more TLPs than its
// link advertised, and a small buffer throttles the link to credits per credit round trip.
#include <catch2/catch.hpp>

#include "models/pcie/link_timing.h"
#include "tests/models/harness.h"

TEST_CASE("a switch ingress never holds more posted TLPs than its header credits", "[credits]") {
  auto r = p2psim::test::run_scenario("tests/data/models/write_read.yaml",
                                      {"link.nic0.credits.ph=2", "transfers.read.size=4KiB"});
  const auto& w = p2psim::test::transfer(r, "write");
  const auto& ingress = r.stats["switches"]["sw0"]["ingress_max_tlps"]["down1"];  // nic0's port
  INFO("write " << w.gbps << " GB/s; ingress " << ingress.dump());
  CHECK(ingress["posted"].get<int>() == 2);
  CHECK(w.mismatched_bytes == 0);
  // Two 256 B TLPs per credit round trip (switch latency 110 ns plus serialization and the
  // UpdateFC's way back) cannot fill a Gen3 x16 link.
  double limit = p2psim::pcie::analytic_write_gbs(3, 16, 256, w.bytes);
  CHECK(w.gbps < 0.5 * limit);
  CHECK(w.gbps > 2 * 256 / 200.0);  // and it is not starved: round trip under 200 ns
  CHECK(r.stats["links"]["nic0"]["upstream"]["credit_stalls"].get<uint64_t>() > 0);
}

TEST_CASE("with the default credits the same link is not credit-bound", "[credits]") {
  auto r =
      p2psim::test::run_scenario("tests/data/models/write_read.yaml", {"transfers.read.size=4KiB"});
  const auto& w = p2psim::test::transfer(r, "write");
  const auto& ingress = r.stats["switches"]["sw0"]["ingress_max_tlps"]["down1"];
  CHECK(ingress["posted"].get<int>() <= 64);
  CHECK(w.gbps == Approx(p2psim::pcie::analytic_write_gbs(3, 16, 256, w.bytes)).epsilon(0.02));
}

TEST_CASE("a root complex that re-emits a burst in smaller TLPs frees it with the credits it took",
          "[credits][burst]") {
  // A run whose receivers gave back other credits than their TLPs took ends in a logic_error
  // naming the link (sim/core/runner.cpp). Re-emitted in place, a burst of 256 B TLPs came
  // back to the DMA engine's link as one header credit per 64 B piece: four times as many as
  // it took (98,304 too many in scenarios/default.yaml's single_rc run).
  p2psim::core::run_result r;
  REQUIRE_NOTHROW(r = p2psim::test::run_scenario("tests/data/models/burst_re_emit.yaml"));
  const auto& w = p2psim::test::transfer(r, "write");
  CHECK(w.bytes == 1 << 20);
  CHECK(w.mismatched_bytes == 0);
  CHECK(w.failed_bytes == 0);
  // 256 B TLPs in (MPS 256), 64 B pieces out.
  CHECK(r.stats["links"]["nic0"]["upstream"]["tlps"].get<uint64_t>() == (1 << 20) / 256);
  CHECK(r.stats["links"]["gpu0"]["downstream"]["tlps"].get<uint64_t>() == (1 << 20) / 64);
}

TEST_CASE("a run reports the TLPs in flight at its fullest: one for a single posted write",
          "[credits]") {
  auto r = p2psim::test::run_scenario("tests/data/models/burst_re_emit.yaml",
                                      {"fidelity=tlp", "transfers.write.size=4B"});
  CHECK(r.tlps == 1);
  CHECK(r.peak_in_flight == 1);
  CHECK(p2psim::core::to_json(r)["sim"]["peak_in_flight"] == 1);
}

TEST_CASE("TLPs in flight never exceed the path's posted header credits and the sender's one",
          "[credits]") {
  // A posted write lives from its DMA engine handing it to the link (one at a time: the next
  // when it starts) until the GPU's memory absorbs it; in between it holds a posted header
  // credit of the switch's ingress or of the GPU's (PCIe Base Spec 2.6.1).
  auto r = p2psim::test::run_scenario(
      "tests/data/models/write_read.yaml",
      {"link.nic0.credits.ph=2", "link.gpu0.credits.ph=2", "transfers.read.size=4B"});
  INFO("peak in flight " << r.peak_in_flight);
  CHECK(r.peak_in_flight <= 1 + 2 + 2);
  CHECK(r.peak_in_flight >= 3);  // the credits bind: both buffers fill
}

TEST_CASE("with the default credits the same write has more TLPs in flight", "[credits]") {
  auto r =
      p2psim::test::run_scenario("tests/data/models/write_read.yaml", {"transfers.read.size=4B"});
  INFO("peak in flight " << r.peak_in_flight);
  CHECK(r.peak_in_flight > 1 + 2 + 2);  // the bound above was the credits', not the workload's
}
