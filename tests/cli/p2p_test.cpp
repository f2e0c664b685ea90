// p2psim p2p: p2pBandwidthLatencyTest on a simulated machine (sim/core/p2p_test.h). Its
// matrices are checked against the link arithmetic and against each other: what peer access
// changes, where the platform refuses it, and bad input.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "models/pcie/link_timing.h"
#include "tests/cli/cli_harness.h"

using nlohmann::json;
using p2psim::test::in_build;
using p2psim::test::read_json;
using p2psim::test::run_cli;

TEST_CASE("p2p: two GPUs behind one switch, in p2pBandwidthLatencyTest's layout", "[cli][p2p]") {
  const std::string file = in_build("p2p_switch_two_pairs.json");
  auto r = run_cli("p2p topologies/switch_two_pairs.yaml --size 4MB --json " + file);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  for (const char* line :
       {"[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]", "Device=0 CAN Access Peer Device=1",
        "P2P Connectivity Matrix\n     D\\D     0     1\n     0\t     1     1\n",
        "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n   D\\D     0      1 \n",
        "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)",
        "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)", "P2P=Disabled Latency Matrix (us)",
        "P2P=Enabled Latency (P2P Writes) Matrix (us)\n   GPU     0      1 \n"})
    CHECK(r.out.find(line) != std::string::npos);
  const json j = read_json(file);
  const auto& uni = j["unidirectional_gbps"];
  const auto& bi = j["bidirectional_gbps"];
  const double limit = p2psim::pcie::analytic_write_gbs(3, 16, 256, 4'000'000);
  for (int a : {0, 1}) {
    const int b = 1 - a;
    // With access the copy engine writes into the peer through the switch at the Gen3 x16
    // links' limit (these GPUs have no CUDA copy costs); both ways at once, twice that.
    const double enabled = uni["p2p_enabled"][a][b].get<double>();
    CHECK(enabled <= limit);
    CHECK(enabled > 0.99 * limit);
    CHECK(bi["p2p_enabled"][a][b].get<double>() == Approx(2 * enabled).epsilon(0.01));
    // Without, staged through host memory: the bytes cross the links twice.
    CHECK(uni["p2p_disabled"][a][b].get<double>() < 0.5 * limit);
    // A 4-byte copy over the fabric beats one staged through host memory.
    CHECK(j["latency_us"]["p2p_enabled"][a][b].get<double>() <
          j["latency_us"]["p2p_disabled"][a][b].get<double>());
  }
  CHECK(j["can_access_peer"] == json::parse("[[false, true], [true, false]]"));
}

// The sample's CPU latency is the host's time in each 4-byte asynchronous copy's call: the GPU
// preset's copy_submit (topologies/devices/h200.yaml: 2.2 us, the host time of a
// cudaMemcpyAsync measured on an H200, docs/architecture.md "CUDA copy costs"), whichever the
// pair and whether or not the copy is staged; GPUs without CUDA costs spend none.
TEST_CASE("p2p: the CPU latency rows are each call's host time", "[cli][p2p]") {
  const std::string file = in_build("p2p_h200_costs.json");
  auto r = run_cli(
      "p2p topologies/switch_two_pairs.yaml --size 4MB --set device.gpu0.model=h200 --set "
      "device.gpu1.model=h200 --json " +
      file);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("   CPU     0      1 \n     0   2.20   2.20 \n     1   2.20   2.20 \n") !=
        std::string::npos);
  const json j = read_json(file);
  for (const char* mode : {"p2p_disabled", "p2p_enabled"})
    for (int a : {0, 1})
      for (int b : {0, 1}) {
        CHECK(j["cpu_latency_us"][mode][a][b].get<double>() == Approx(2.2).epsilon(1e-6));
        // The copy itself waits for its call: it takes no less on its stream.
        CHECK(j["latency_us"][mode][a][b].get<double>() >= 2.2 - 1e-6);
      }
  const std::string plain = in_build("p2p_no_costs.json");  // GPUs without CUDA costs
  r = run_cli("p2p topologies/switch_two_pairs.yaml --size 4MB --json " + plain);
  REQUIRE(r.exit_code == 0);
  CHECK(read_json(plain)["cpu_latency_us"]["p2p_enabled"][0][1].get<double>() == 0.0);
}

TEST_CASE("p2p: a platform that does not route P2P reads between root ports", "[cli][p2p]") {
  // arrow_lake: gpu0 and gpu1 share a switch, gpu2 is below another root port. Without
  // access, gpu0 -> gpu2 is staged with peer access "enabled" too; gpu0 -> gpu1 is not.
  const std::string file = in_build("p2p_arrow_lake.json");
  auto r =
      run_cli("p2p topologies/two_socket_8gpu.yaml --size 1MB --fidelity burst --json " + file +
              " --set socket.cpu0.platform=arrow_lake --set socket.cpu1.platform=arrow_lake");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("Device=0 CANNOT Access Peer Device=2") != std::string::npos);
  CHECK(r.out.find("     0\t     1     1     0     0     0     0     0     0\n") !=
        std::string::npos);
  const json j = read_json(file);
  const auto& uni = j["unidirectional_gbps"];
  CHECK(uni["p2p_enabled"][0][2].get<double>() ==
        Approx(uni["p2p_disabled"][0][2].get<double>()).epsilon(0.001));
  CHECK(uni["p2p_enabled"][0][1].get<double>() > 2 * uni["p2p_disabled"][0][1].get<double>());
}

TEST_CASE("p2p: bad input exits 2 and says what is wrong", "[cli][p2p]") {
  auto r = run_cli("p2p topologies/switch_two_pairs.yaml --size 2B");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--size: copies of at least 4 bytes") != std::string::npos);
  r = run_cli("p2p topologies/switch_two_pairs.yaml --size 4KB");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--size") != std::string::npos);
  r = run_cli("p2p topologies/switch_two_pairs.yaml --set transfers.w.size=1MiB");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("topology settings only") != std::string::npos);
  r = run_cli("p2p tests/data/topologies/nic_only.yaml");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("the topology has no GPU") != std::string::npos);
}
