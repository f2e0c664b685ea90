// Burst fidelity against TLP fidelity on the same scenarios: the same TLPs and TLP-hops
// accounted, every byte delivered and verified, and bandwidth within 2%.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/pcie/link_timing.h"
#include "tests/cli/cli_harness.h"

using p2psim::test::run_cli;

namespace {
// `set`: a --set item, or "".
nlohmann::json run(const std::string& scenario, const std::string& fidelity,
                   const std::string& set = "") {
  const std::string file = std::string(P2PSIM_BUILD_DIR) + "/burst_" + fidelity + "_" +
                           std::to_string(std::hash<std::string>()(scenario + set)) + ".json";
  auto r = run_cli("run " + scenario + " --fidelity " + fidelity + " --json " + file +
                   (set.empty() ? "" : " --set " + set));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  std::ifstream f(file);
  return nlohmann::json::parse(f);
}

void compare(const std::string& scenario, double tolerance = 0.02) {
  const auto tlp = run(scenario, "tlp");
  const auto burst = run(scenario, "burst");
  CHECK(tlp["sim"]["fidelity"] == "tlp");
  CHECK(burst["sim"]["fidelity"] == "burst");
  CHECK(burst["sim"]["tlps"] == tlp["sim"]["tlps"]);
  CHECK(burst["sim"]["hops"] == tlp["sim"]["hops"]);
  REQUIRE(burst["bandwidth"].size() == tlp["bandwidth"].size());
  for (size_t i = 0; i < tlp["bandwidth"].size(); ++i) {
    const auto& t = tlp["bandwidth"][i];
    const auto& b = burst["bandwidth"][i];
    INFO(t["topology"] << " " << t["transfer"] << ": tlp " << t["gbps"] << " GB/s, burst "
                       << b["gbps"] << " GB/s");
    CHECK(b["bytes"] == t["bytes"]);
    CHECK(b["mismatched_bytes"] == 0);
    CHECK(b["failed_bytes"] == 0);
    CHECK(b["gbps"].get<double>() == Approx(t["gbps"].get<double>()).epsilon(tolerance));
  }
}
}  // namespace

TEST_CASE("burst fidelity: the three topology classes within 2% of TLP fidelity", "[cli][burst]") {
  compare("scenarios/default.yaml");  // 8 MiB writes and reads on PIX, PHB, SYS
}

TEST_CASE("burst fidelity: 1 MiB transfers within 2% of TLP fidelity", "[cli][burst]") {
  compare("scenarios/pix_bandwidth.yaml");
}

TEST_CASE("burst fidelity: concurrent streams on shared links within 2%", "[cli][burst]") {
  compare("scenarios/layouts.yaml");
}

TEST_CASE("burst fidelity: forwarded bursts take turns with other classes on a busy 16-GPU machine",
          "[cli][burst]") {
  // 256 streams at once through 8 switches: on a switch's or root port's egress, a forwarded
  // write or read-request burst goes only up to its first TLP that came into the switch after
  // a TLP of another class queued there, and its lag runs from when its first TLP was ready
  // there (docs/architecture.md, "Taking turns with other classes", "Pipelining"). Before
  // both, the streams were 2.03% off TLP fidelity on average and up to 6.19%.
  //
  // Which burst goes first where many meet turns on picoseconds: moving one switch's latency
  // by 1 ps moves TLP fidelity's figures by 0.006% at most on average, but burst fidelity's by
  // up to 1.7%, and the gap between them from 0.64% to 1.62% on average and 2.1% to 5.1% at
  // worst (docs/architecture.md, "Burst fidelity on a busy machine"). One run is one draw of
  // that: the figures are averaged over the machine as it is and four 1-ps variants of it
  // (1.03% and 3.34% when this was written; 1.24% and 3.15% once endpoints took write bursts
  // as they came; 1.19% and 2.17% once a round of a requester's turns stood for at most one
  // burst, with the DLLPs counted in symbol times). Per stream this is not yet the 1% of the
  // rest.
  const std::string scenario = "tests/data/scenarios/scale_16gpu_eighth.yaml";
  const std::vector<std::string> variants = {
      "", "switch.sw3.latency=110.001ns", "switch.sw3.latency=109.999ns",
      "switch.sw0.latency=110.001ns", "switch.sw5.latency=109.999ns"};
  double mean_sum = 0, worst_sum = 0;
  for (const std::string& v : variants) {
    const auto tlp = run(scenario, "tlp", v);
    const auto burst = run(scenario, "burst", v);
    REQUIRE(tlp["bandwidth"].size() == 256);
    REQUIRE(burst["bandwidth"].size() == 256);
    double sum = 0, worst = 0;
    for (size_t i = 0; i < 256; ++i) {
      const double t = tlp["bandwidth"][i]["gbps"], b = burst["bandwidth"][i]["gbps"];
      CHECK(burst["bandwidth"][i]["mismatched_bytes"] == 0);
      const double gap = std::abs(b - t) / t;
      sum += gap;
      worst = std::max(worst, gap);
    }
    UNSCOPED_INFO((v.empty() ? "as it is" : v)
                  << ": mean gap " << sum / 256 * 100 << "%, worst " << worst * 100 << "%");
    mean_sum += sum / 256;
    worst_sum += worst;
  }
  const double n = double(variants.size());
  INFO("averaged: mean gap " << mean_sum / n * 100 << "%, worst " << worst_sum / n * 100 << "%");
  CHECK(mean_sum / n < 0.015);
  CHECK(worst_sum / n < 0.03);
}

TEST_CASE("burst fidelity: a burst that waited in a queue has had its TLPs come in meanwhile",
          "[cli][burst]") {
  // Two Gen3 x4 writers into one GPU on a Gen3 x8 link: counted from its start, each burst's
  // lag (its TLPs coming in at x4 speed) held the x8 wire again after it had waited, and each
  // writer got half of TLP fidelity's bandwidth (-49%). What is left (2.7% and 3.0%) is two
  // ramp-up bursts behind the other writer's 256-TLP bursts, which the run warns of.
  compare("tests/data/generated/burst_lag_elapsed_in_queue.yaml", 0.04);
}

TEST_CASE("burst fidelity: what comes in while a burst holds the wire goes in its gaps",
          "[cli][burst]") {
  // A burst whose TLPs trickle in, or wait for credits, holds the wire longer than its
  // symbols take; TLP by TLP others go between its TLPs (docs/architecture.md, "Gaps").
  // Waiting for the whole burst instead: completions with Relaxed Ordering behind write
  // bursts paced by posted credits, 74 times slower than TLP by TLP (seed 731)...
  compare("tests/data/generated/burst_gaps_completions_pass_paced_writes.yaml");
  // ...proxied read requests behind their own completion bursts trickling in from a Gen1 x4
  // link, 32% slower (seed 566)...
  compare("tests/data/generated/burst_held_by_own_completions.yaml");
  // ...a write behind read requests trickling onto a socket interconnect, 2.8% slower
  // (seed 1095)...
  compare("tests/data/generated/burst_held_on_interconnect.yaml", 0.01);
  // ...and read requests, which may not pass posted writes, behind a write burst paced by a
  // switch's credits: TLP by TLP they wait only for the writes that came in before them; for
  // the whole burst, 5.7% slower (seed 1626).
  compare("tests/data/generated/burst_gaps_read_behind_paced_writes.yaml", 0.01);
}

TEST_CASE("burst fidelity: bursts into a root port are paced by how long it holds each TLP",
          "[cli][burst]") {
  // A root port with room for one write TLP frees it once the root complex has forwarded it to
  // the peer: TLP by TLP one TLP goes per credit loop, forwarding latency included. Paced by a
  // loop without it, bursts went 4.3 times as fast (seed 2365)...
  compare("tests/data/generated/burst_paced_by_p2p_hold.yaml", 0.01);
  // ...2.7 times across the socket interconnect (seed 1709)...
  compare("tests/data/generated/burst_paced_by_interconnect_p2p_hold.yaml", 0.01);
  // ...2.1 times behind a translating IOMMU, routed where the IOMMU maps it (seed 1159)...
  compare("tests/data/generated/burst_paced_by_translated_p2p_hold.yaml", 0.01);
  // ...and 70% faster where the root complex re-emits each write as 64 B TLPs and frees it
  // once the last of them has left (seed 1036).
  compare("tests/data/generated/burst_paced_by_re_emitted_p2p_hold.yaml", 0.01);
}

TEST_CASE("burst fidelity: reads limited by their tags stay within 3%", "[cli][burst]") {
  // Tags come back a burst at a time rather than one by one: docs/architecture.md gives
  // 2.5% for 16 tags on this path, the largest error measured for a tag-limited read.
  compare("tests/data/scenarios/tag_limited_read.yaml --set device.nic0.tags=16", 0.03);
  compare("tests/data/scenarios/tag_limited_read.yaml --set device.nic0.tags=4", 0.03);
}

TEST_CASE("burst fidelity: 1 MiB matrix pairs never beat the analytic link limit", "[cli][burst]") {
  // Every pair of gpu0, gpu1, nic0 under one switch, alone, Gen3 x16 at MPS 256. A burst's
  // DLLPs go between its TLPs: charged after its last one, they let a transfer's last burst
  // land early by all of them (0.48 us of a 64 KiB burst: 13.04 GB/s against 12.99).
  const std::string matrix =
      "scenarios/bench/matrix_8gpu.yaml --set matrix.size=1MiB "
      "--set 'matrix.devices=[gpu0, gpu1, nic0]'";
  const auto tlp = run(matrix, "tlp");
  const auto burst = run(matrix, "burst");
  const double limit = p2psim::pcie::analytic_write_gbs(3, 16, 256, 1 << 20);
  REQUIRE(burst["bandwidth"].size() == 6);
  REQUIRE(tlp["bandwidth"].size() == 6);
  for (size_t i = 0; i < 6; ++i) {
    const auto& t = tlp["bandwidth"][i];
    const auto& b = burst["bandwidth"][i];
    INFO(b["transfer"] << ": tlp " << t["gbps"] << " GB/s, burst " << b["gbps"] << " GB/s, limit "
                       << limit);
    CHECK(b["mismatched_bytes"] == 0);
    CHECK(b["gbps"].get<double>() <= limit);
    CHECK(t["gbps"].get<double>() <= limit);
    CHECK(b["gbps"].get<double>() == Approx(t["gbps"].get<double>()).epsilon(0.01));
  }
}

TEST_CASE("burst fidelity: a short job that ends amid its requester's turns is warned of",
          "[cli][burst]") {
  // TLP by TLP the job that started first keeps the lead its first turns gave it; bursts'
  // turns keep it to within 2 TLPs, so a job that ends while another of its requester still
  // takes turns with it may end up to 2 TLPs' time apart (docs/architecture.md, "Burst
  // fidelity", ramps): more than 1% of a job of fewer than 200 TLPs, which the run says.
  struct case_ {
    std::string scenario, link, transfer;
    double tlps;  // of the short job: 2 of them are at most this share of its time
  };
  const case_ cases[] = {
      // 256 KiB in 4 KiB TLPs beside a 262147 B write (seed 430: 1.57% slow)
      {"tests/data/generated/burst_turns_short_job_host_write.yaml", "gpu1", "t0", 64},
      // 8195 B in 256 B TLPs beside a 64 KiB write (seed 2905: 1.45% slow)
      {"tests/data/generated/burst_turns_short_job_iommu_walks.yaml", "nic0", "t1", 33},
  };
  for (const auto& c : cases) {
    INFO(c.scenario);
    const auto tlp = run(c.scenario, "tlp");
    const auto burst = run(c.scenario, "burst");
    const auto& run = burst["runs"][0];
    CHECK(run["stats"]["devices"][c.link]["requester"]["short_jobs_ended_in_turns"] == 1);
    CHECK(tlp["runs"][0]["stats"]["devices"][c.link]["requester"]["short_jobs_ended_in_turns"] ==
          0);
    bool warned = false;
    for (const auto& w : run["warnings"])
      warned |=
          w.get<std::string>().rfind("link " + c.link + ": 1 of " + c.link + "'s jobs", 0) == 0;
    CHECK(warned);
    for (size_t i = 0; i < tlp["bandwidth"].size(); ++i) {
      const auto& t = tlp["bandwidth"][i];
      const auto& b = burst["bandwidth"][i];
      INFO(b["transfer"] << ": tlp " << t["gbps"] << " GB/s, burst " << b["gbps"] << " GB/s");
      CHECK(b["mismatched_bytes"] == 0);
      // Within the bound the warning gives: 2 TLPs of a job's at least `tlps` turns.
      const double bound = b["transfer"] == c.transfer ? 2 / c.tlps : 0.01;
      CHECK(b["gbps"].get<double>() == Approx(t["gbps"].get<double>()).epsilon(bound));
    }
  }
  // A job that ends amid turns but spans more than 200 TLPs is not named: 65535 B in 512 B
  // TLPs beside a 1 MiB write (seed 1060), within 1% of TLP fidelity.
  const auto long_job =
      run("tests/data/generated/burst_ramp_jobs_end_together.yaml", "burst")["runs"][0];
  for (const auto& w : long_job["warnings"])
    CHECK(w.get<std::string>().find("took turns with them") == std::string::npos);
  CHECK(long_job["stats"]["devices"]["gpu0"]["requester"]["short_jobs_ended_in_turns"] == 0);
}

namespace {
// tests/data/generated/burst_turns_grouped_by_path: one GPU's ten writes at once, six across
// UPI and four under its socket's other root port, those four first.
const char* const turns_grouped_by_path = "tests/data/generated/burst_turns_grouped_by_path.yaml";

// Every byte of the ten writes over the time the last one took, GB/s.
double aggregate_gbps(const nlohmann::json& result) {
  double bytes = 0, seconds = 0;
  for (const auto& b : result["bandwidth"]) {
    bytes += b["bytes"].get<double>();
    seconds = std::max(seconds, b["seconds"].get<double>());
  }
  return bytes / seconds / 1e9;
}
}  // namespace

TEST_CASE("burst fidelity: a GPU's writes that part at its root complex fill its link",
          "[cli][burst]") {
  // The writes start together, so all their bytes over the last one's time is at most what
  // the writer's Gen3 x16 link carries (MPS 256 B, 4DW headers: BAR1 above 4 GiB). The UPI
  // path takes 60% of it and can carry 61.5%, so TLP by TLP the link runs full.
  const auto tlp = run(turns_grouped_by_path, "tlp");
  const auto burst = run(turns_grouped_by_path, "burst");
  const double limit = p2psim::pcie::analytic_write_gbs(3, 16, 256, 10 * 256 * 1024);
  INFO("limit " << limit << " GB/s, tlp " << aggregate_gbps(tlp) << ", burst "
                << aggregate_gbps(burst));
  CHECK(aggregate_gbps(tlp) <= limit);
  CHECK(aggregate_gbps(tlp) >= 0.995 * limit);
  CHECK(aggregate_gbps(burst) <= limit);
  for (const auto* r : {&tlp, &burst}) {
    REQUIRE((*r)["bandwidth"].size() == 10);
    for (const auto& b : (*r)["bandwidth"]) {
      CHECK(b["mismatched_bytes"] == 0);
      CHECK(b["failed_bytes"] == 0);
    }
  }
}

TEST_CASE("burst fidelity: a round of turns feeds the paths past a parting evenly",
          "[cli][burst]") {
  // TLP by TLP a requester's jobs alternate every TLP, so each path past the root complex gets
  // its share evenly. Turns of up to 256 TLPs each sent the UPI path its TLPs in runs of six
  // turns at the link's rate, more than the root complex holds, and nothing through the four
  // turns toward the other root port, so UPI idled: every write 7% slow, with no warning. A
  // round of turns now stands for at most one burst's TLPs (docs/architecture.md, "Burst
  // fidelity", turns). It made gpu12's and gpu13's writes of scale_16gpu_eighth.yaml (the
  // test above) 2-4% slow at burst fidelity in every 1-ps variant.
  compare(turns_grouped_by_path, 0.01);
}
