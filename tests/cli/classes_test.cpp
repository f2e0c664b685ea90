// The three topology classes of GPUDirect RDMA 13.3, 5.4 Supported Systems: "PCIe switches
// only ... yields the best performance", "a single CPU/IOH ... works, but yields worse
// performance (especially peer-to-peer read bandwidth ... severely limited on some
// processor architectures)", "QPI/HT ... may be extremely performance-limited".
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_harness.h"

namespace {

nlohmann::json run_json(const std::string& args, const std::string& name) {
  std::string file = std::string(P2PSIM_BUILD_DIR) + "/" + name + ".json";
  auto r = p2psim::test::run_cli(args + " --json " + file);
  INFO(args << "\n" << r.err);
  REQUIRE(r.exit_code == 0);
  std::ifstream f(file);
  return nlohmann::json::parse(f);
}

}  // namespace

TEST_CASE("default scenario: switch only >= single CPU >= across QPI, write and read",
          "[cli][classes]") {
  auto j = run_json("run scenarios/default.yaml", "classes_default");
  std::map<std::string, std::map<std::string, double>> bw;  // topology -> op -> GB/s
  std::map<std::string, std::string> path;
  for (const auto& b : j["bandwidth"]) {
    bw[b["topology"]][b["op"]] = b["gbps"];
    path[b["topology"]] = b["path"];
    CHECK(b["mismatched_bytes"] == 0);
    CHECK(b["failed_bytes"] == 0);
  }
  CHECK(path["switch_only"] == "PIX");
  CHECK(path["single_rc"] == "PHB");
  CHECK(path["cross_qpi"] == "SYS");
  for (const char* op : {"write", "read"}) {
    INFO(op);
    CHECK(bw["switch_only"][op] >= bw["single_rc"][op]);
    CHECK(bw["single_rc"][op] >= bw["cross_qpi"][op]);
    CHECK(bw["cross_qpi"][op] > 0);
  }
  REQUIRE(j["sim"]["tlps"].get<uint64_t>() > 0);
  REQUIRE(j["latency"].size() == 6);
  // The topologies run one after the other: the fullest one's TLPs in flight, not a sum.
  uint64_t fullest = 0;
  for (const auto& r : j["runs"])
    fullest = std::max(fullest, r["sim"]["peak_in_flight"].get<uint64_t>());
  CHECK(fullest > 0);
  CHECK(j["sim"]["peak_in_flight"] == fullest);
}

TEST_CASE("Sandy Bridge-EP: P2P read through the root complex is several times below write",
          "[cli][classes]") {
  auto j =
      run_json("run tests/data/scenarios/single_rc.yaml --set socket.cpu0.platform=sandy_bridge_ep",
               "classes_snb");
  double write = 0, read = 0;
  for (const auto& b : j["bandwidth"]) (b["op"] == "write" ? write : read) = b["gbps"];
  INFO("write " << write << " GB/s, read " << read << " GB/s");
  CHECK(read * 3 < write);
  CHECK(read < 1.0);  // docs/design.md, "Calibration figures": < 1.0 GB/s on E5-2670
  CHECK(write == Approx(5.2).epsilon(0.05));  // docs/design.md, "Calibration figures": 5.2
}

TEST_CASE("Sandy Bridge-EP across QPI is extremely limited", "[cli][classes]") {
  auto j = run_json(
      "run scenarios/default.yaml --set topologies=[../topologies/cross_qpi.yaml] "
      "--set socket.cpu0.platform=sandy_bridge_ep "
      "--set socket.cpu1.platform=sandy_bridge_ep --set transfers.write.size=1MiB "
      "--set transfers.read.size=1MiB --set measure.latency=false",
      "classes_snb_qpi");
  for (const auto& b : j["bandwidth"]) {
    INFO(b["op"]);
    // docs/design.md, "Calibration figures": < 0.3 GB/s (Potluri et al. / OSU).
    CHECK(b["gbps"].get<double>() < 0.3);
  }
}

TEST_CASE("topo prints the nvidia-smi topo -m matrix and writes DOT", "[cli][topo]") {
  std::string dot = std::string(P2PSIM_BUILD_DIR) + "/cross_qpi.dot";
  auto r = p2psim::test::run_cli("topo topologies/cross_qpi.yaml --dot " + dot);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("SYS") != std::string::npos);
  CHECK(r.out.find("Legend:") != std::string::npos);
  std::ifstream f(dot);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  CHECK(text.find("graph") != std::string::npos);
  CHECK(text.find("gpu0") != std::string::npos);
}

// docs/formats-topology.md, "Mixed platforms". A --set that makes one socket Sandy Bridge-EP
// beside a Skylake-SP one gave the SYS path 10.3 GB/s, above two Skylake-SP sockets' 8.0.
TEST_CASE("sockets of different platforms: refused, or on purpose across by the stricter side",
          "[cli][classes][platform]") {
  auto refused = p2psim::test::run_cli(
      "run scenarios/default.yaml --set socket.cpu0.platform=sandy_bridge_ep");
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.err,
             Catch::Contains("--set socket.cpu0.platform=sandy_bridge_ep: error: platform: "
                             "socket cpu0 uses platform 'sandy_bridge_ep' and socket cpu1 "
                             "'skylake_sp'"));
  // On purpose, either way round: the GPU's socket Sandy Bridge-EP and the NIC's Skylake-SP,
  // then the other way. Both directions cross at Sandy Bridge-EP's policy (< 0.3 GB/s).
  const std::string run =
      "run scenarios/default.yaml --set topologies=[../tests/data/models/mixed_qpi.yaml] "
      "--set transfers.write.size=1MiB --set transfers.read.size=1MiB "
      "--set measure.latency=false";
  for (const std::string swap :
       {"", " --set socket.cpu0.platform=skylake_sp --set socket.cpu1.platform=sandy_bridge_ep"}) {
    INFO("swapped: " << !swap.empty());
    auto j = run_json(run + swap, "classes_mixed");
    REQUIRE(j["bandwidth"].size() == 2);
    for (const auto& b : j["bandwidth"]) {
      INFO(b["op"]);
      CHECK(b["path"] == "SYS");
      CHECK(b["gbps"].get<double>() < 0.3);
      CHECK(b["failed_bytes"] == 0);
      CHECK(b["mismatched_bytes"] == 0);
    }
    bool warned = false;
    for (const auto& w : j["runs"][0]["warnings"])
      warned |= w.get<std::string>().find(
                    "mixed_qpi.yaml:5:18: mixed_platforms: sockets of "
                    "different platforms") != std::string::npos;
    CHECK(warned);
  }
}
