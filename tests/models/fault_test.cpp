// Fault injection (scenarios/faults): each fault ends with a report of what was refused,
// lost or timed out, where every byte went, and an integrity check that no byte reached
// memory it was not allowed to reach. None may crash or hang the run.
#include <catch2/catch.hpp>

#include "tests/models/harness.h"

using p2psim::test::run_scenario;

namespace {
using p2psim::test::program_dma;
uint64_t u(const nlohmann::json& j) {
  return j.get<uint64_t>();
}
// Every byte of a DMA is accounted for exactly once, and none escaped.
void check_accounted(const nlohmann::json& d) {
  INFO(d.dump());
  CHECK(u(d["landed_bytes"]) + u(d["failed_bytes"]) + u(d["lost_bytes"]) +
            u(d["timed_out_bytes"]) ==
        u(d["bytes"]));
  CHECK(u(d["escaped_bytes"]) == 0);
  CHECK(u(d["mismatched_bytes"]) == 0);
}
}  // namespace

TEST_CASE("fault: a process killed during DMA has its pins freed after the DMA (5.3 6.4)",
          "[fault]") {
  auto r = run_scenario("scenarios/faults/kill_during_dma.yaml");
  const auto& w = program_dma(r, "w");
  check_accounted(w);
  CHECK(u(w["landed_bytes"]) == 8u << 20);  // the callback waited: everything landed
  CHECK(r.program["driver"]["callbacks"] == 1);
  CHECK(r.program["peer_driver"]["callbacks_that_waited"] == 1);
  CHECK(r.stats["devices"]["gpu0"]["bar1_unmapped_accesses"] == 0);
  CHECK(r.program["bar1"][0]["used_bytes"] == 32u << 20);  // only the reserved region left
  CHECK(r.errors.empty());
}

TEST_CASE("fault: a killed process under a driver that does not wait loses the rest of its DMA",
          "[fault]") {
  auto r =
      run_scenario("scenarios/faults/kill_during_dma.yaml", {"peer_driver.wait_in_callback=false"});
  const auto& w = program_dma(r, "w");
  check_accounted(w);
  CHECK(u(w["failed_bytes"]) > 0);  // refused by the GPU: BAR1 was unmapped under it
  CHECK(u(w["landed_bytes"]) > 0);
  CHECK_FALSE(r.errors.empty());
}

TEST_CASE("fault: cuMemFree under the peer's DMA refuses every later write (6.4)", "[fault]") {
  auto r = run_scenario("scenarios/faults/free_during_dma.yaml");
  const auto& w = program_dma(r, "w");
  check_accounted(w);
  CHECK(u(w["failed_bytes"]) > 0);
  CHECK(u(w["landed_bytes"]) > 0);
  // Each refused byte was a write to an unmapped BAR1 page (256 B per TLP on this path).
  CHECK(u(r.stats["devices"]["gpu0"]["bar1_unmapped_accesses"]) * 256 == u(w["failed_bytes"]));
  bool reported = false;
  for (const auto& e : r.errors) reported |= e.find("refused by the fabric") != std::string::npos;
  CHECK(reported);
}

TEST_CASE("fault: a BAR1 exhaustion storm refuses pins with -ENOMEM and never over-commits",
          "[fault]") {
  auto r = run_scenario("scenarios/faults/bar1_storm.yaml");
  INFO(r.program["bar1"].dump());
  const auto& bar1 = r.program["bar1"][0];
  CHECK(bar1["get_pages_enomem"] == 5);             // five of the eight pins did not fit at first
  CHECK(u(bar1["peak_used_bytes"]) == 224u << 20);  // reserved + three 64 MiB pins
  CHECK(u(bar1["peak_used_bytes"]) <= u(bar1["total_bytes"]));
  CHECK(r.program["dma"].size() == 8);  // yet every process moved its data in the end
  for (const auto& d : r.program["dma"]) {
    check_accounted(d);
    CHECK(u(d["landed_bytes"]) == 1u << 20);
  }
  CHECK(r.errors.empty());  // the -ENOMEM refusals were expected by the program
}

TEST_CASE("fault: a stale I/O mapping makes the IOMMU block the rest of the DMA (5.4 6.4)",
          "[fault]") {
  auto r = run_scenario("scenarios/faults/iommu_stale_mapping.yaml");
  const auto& w = program_dma(r, "w");
  check_accounted(w);
  const uint64_t faults = u(r.stats["root_complexes"]["cpu0"]["iommu_faults"]);
  CHECK(faults > 0);
  CHECK(u(w["failed_bytes"]) >= faults * 256);  // each blocked write took its bytes with it
  CHECK(u(w["landed_bytes"]) > 0);
}

TEST_CASE("fault: a link that goes down mid-transfer: lost writes, UR and completion timeouts",
          "[fault]") {
  auto r = run_scenario("scenarios/faults/link_down.yaml");
  const auto& w = program_dma(r, "w");
  const auto& rd = program_dma(r, "r");
  check_accounted(w);
  check_accounted(rd);
  CHECK(u(w["landed_bytes"]) > 0);
  CHECK(u(w["lost_bytes"]) > 0);        // posted writes went down with the link
  CHECK(u(rd["failed_bytes"]) > 0);     // read requests after it: UR from the switch
  CHECK(u(rd["timed_out_bytes"]) > 0);  // reads in flight: their completions never came
  CHECK(u(r.stats["switches"]["sw0"]["unsupported_requests"]) > 0);
  CHECK(u(r.stats["devices"]["nic0"]["requester"]["completion_timeouts"]) > 0);
  const auto& link = r.stats["links"]["gpu0"];
  CHECK(u(link["downstream"]["dropped_tlps"]) + u(link["upstream"]["dropped_tlps"]) > 0);
  // The run ended: a completion timeout (50 ms) after the link went down, not never.
  CHECK(r.simulated_ns > 50'000'000u);
  CHECK(r.simulated_ns < 51'000'000u);
  CHECK(r.errors.size() == 3);  // lost, refused and timed out: each said once
}
