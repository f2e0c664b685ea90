// Switch layouts under concurrent load: two NIC -> GPU write streams that run at the same time
// (`start: with_previous`), each NIC beside its GPU or all NICs under another switch. The
// report names the link the streams share.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_harness.h"

using p2psim::test::run_cli;

TEST_CASE("layouts: streams that share switch uplinks split their bandwidth", "[cli][layouts]") {
  const std::string json_file = std::string(P2PSIM_BUILD_DIR) + "/layouts.json";
  auto r = run_cli("run scenarios/layouts.yaml --json " + json_file);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  std::ifstream f(json_file);
  auto j = nlohmann::json::parse(f);
  std::map<std::string, std::vector<double>> gbps;  // topology -> per stream
  for (const auto& b : j["bandwidth"]) {
    CHECK(b["mismatched_bytes"] == 0);
    gbps[b["topology"]].push_back(b["gbps"]);
  }
  REQUIRE(gbps["layout_paired"].size() == 2);
  REQUIRE(gbps["layout_split"].size() == 2);
  for (int i = 0; i < 2; ++i) {
    // Paired: each stream alone on its links, at the x16 Gen3 write rate. Split: both
    // streams cross sw0's uplink and sw1's downlink, so each gets at most half of one link.
    CHECK(gbps["layout_paired"][i] > 12.0);
    CHECK(gbps["layout_split"][i] < gbps["layout_paired"][i] / 2);
  }
  // The two streams ran at the same time: the split layout's shared link carried both.
  const auto& sw1 = j["runs"][1]["stats"]["links"]["sw1"]["downstream"];
  CHECK(sw1["utilization_ratio"].get<double>() > 0.9);
  const size_t split = r.out.find("=== Topology layout_split");
  REQUIRE(split != std::string::npos);
  const size_t table = r.out.find("Busiest links", split);
  REQUIRE(table != std::string::npos);
  const std::string first_row = r.out.substr(r.out.find('\n', r.out.find('\n', table) + 1) + 1, 80);
  CHECK(first_row.find("link sw1") != std::string::npos);
  CHECK(first_row.find("<- bottleneck") != std::string::npos);
}

TEST_CASE("layouts: the first transfer cannot start with a previous one", "[cli][layouts]") {
  const std::string file = std::string(P2PSIM_BUILD_DIR) + "/bad_start.yaml";
  std::ofstream(file) << "name: bad\ntopology: " P2PSIM_SOURCE_DIR
                         "/topologies/switch_only.yaml\ntransfers:\n"
                         "  - {initiator: nic0, target: gpu0, op: write, size: 1MiB, start: "
                         "with_previous}\n";
  auto r = run_cli("run " + file);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("bad_start.yaml:4:") != std::string::npos);
  CHECK(r.err.find("start: the first transfer has no previous one") != std::string::npos);
}
