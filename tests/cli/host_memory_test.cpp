// Host memory in programs: the GPUDirect RDMA guide's chapter 2 ("Standard DMA Transfer":
// a device's DMA into pinned host memory, then a copy to the GPU) against chapter 3 (the
// device writes into the GPU's memory through BAR1) on the three topology classes of 5.4, and
// the program's own memory on either socket, registered with CUDA and pinned by the kernel
// for the device. Every byte each DMA and copy moved is checked by the run (exit code 0).
#include <catch2/catch.hpp>

#include <map>
#include <nlohmann/json.hpp>

#include "models/pcie/link_timing.h"
#include "tests/cli/cli_harness.h"

using nlohmann::json;
using p2psim::test::in_build;
using p2psim::test::read_json;
using p2psim::test::run_cli;

namespace {

using p2psim::pcie::tlp_type;

// What no span of posted writes can beat on a Gen3 x16 link at MPS 256 B: its TLPs alone on
// the wire, with their framing and SKIP ordered sets but no DLLPs (the analytic model's
// steady-state ACK and UpdateFC share is not owed within a finite span: the last ones follow
// its last TLP).
double wire_limit_gbs(bool addr64) {
  using namespace p2psim::pcie;
  const double payload = 256.0 / (256 + framing_bytes + header_bytes(tlp_type::mwr, addr64));
  return raw_gbs(3, 16) * (1 - skip_fraction) * payload;
}

// A run's DMA steps' rates (GB/s) and CUDA copies' times (s), by name.
struct figures {
  std::map<std::string, json> dma;
  std::map<std::string, double> copy_seconds;
};

figures figures_of(const json& run) {
  figures f;
  for (const json& d : run["program"]["dma"]) f.dma[d["name"].get<std::string>()] = d;
  for (const json& b : run["bandwidth"])
    if (b.contains("call")) f.copy_seconds[b["transfer"].get<std::string>()] = b["seconds"];
  return f;
}

double span_seconds(const json& dma) {
  return (dma["last_ns"].get<double>() - dma["first_ns"].get<double>()) * 1e-9;
}

}  // namespace

TEST_CASE("host memory: chapter 2 and chapter 3 deliver every byte on the three classes",
          "[cli][cuda][host]") {
  const std::string file = in_build("standard_vs_rdma.json");
  auto r = run_cli("run scenarios/standard_vs_rdma.yaml --json " + file);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const json j = read_json(file);
  REQUIRE(j["runs"].size() == 3);
  constexpr uint64_t bytes = 8 << 20;
  // Gen3 x16 at MPS 256 B: a write into host memory below 4 GiB has a 32-bit address (3DW
  // header), one into BAR1 a 64-bit one (4DW). The analytic model's steady state, and the
  // bound of the TLPs alone.
  const double to_host = p2psim::pcie::analytic_write_gbs(3, 16, 256, bytes, false);
  const double to_bar1 = p2psim::pcie::analytic_write_gbs(3, 16, 256, bytes, true);
  for (const json& run : j["runs"]) {
    const std::string topology = run["topology"];
    INFO(topology);
    const figures f = figures_of(run);
    for (const char* name : {"ch2_device_to_host", "ch3_device_to_gpu"}) {
      const json& d = f.dma.at(name);
      CHECK(d["landed_bytes"] == bytes);
      CHECK(d["mismatched_bytes"] == 0);
    }
    const double host_gbs = f.dma.at("ch2_device_to_host")["gbps"];
    const double gpu_gbs = f.dma.at("ch3_device_to_gpu")["gbps"];
    CHECK(host_gbs < wire_limit_gbs(false));
    CHECK(gpu_gbs < wire_limit_gbs(true));
    // The path of each: within one socket the device's writes reach host memory at its link's
    // limit; across UPI less.
    if (topology == "cross_qpi")
      CHECK(host_gbs < 0.8 * to_host);
    else
      CHECK(host_gbs > 0.99 * to_host);
    if (topology == "switch_only") CHECK(gpu_gbs > 0.99 * to_bar1);  // the switch's P2P
    // Chapter 2 moves the message twice, one move after the other: the copy comes on top of
    // the device's DMA, and chapter 3's one move takes less than the two on every class.
    const double ch2 =
        span_seconds(f.dma.at("ch2_device_to_host")) + f.copy_seconds.at("ch2_host_to_gpu");
    const double ch3 = span_seconds(f.dma.at("ch3_device_to_gpu"));
    CHECK(ch3 < ch2);
  }
}

TEST_CASE("host memory: the program's memory on either socket: registered and pinned",
          "[cli][cuda][host]") {
  const std::string file = in_build("host_memory_steps.json");
  auto r = run_cli("run tests/data/scenarios/host_memory_steps.yaml --json " + file);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);  // every step returned what it expects, every byte checked
  const json run = read_json(file)["runs"][0];
  const figures f = figures_of(run);
  // The NIC is below cpu1: memory beside it is reached at its link's limit, memory beside the
  // GPU across UPI; the GPU's copy engine reads memory beside it faster than across UPI.
  CHECK(f.dma.at("nic_to_near_nic")["gbps"].get<double>() >
        f.dma.at("nic_to_near_gpu")["gbps"].get<double>());
  CHECK(f.copy_seconds.at("copy_far") > f.copy_seconds.at("copy_near"));
  // The device read back what the copy put into the registered buffer.
  CHECK(f.dma.at("nic_reads_back")["stale_bytes"] == 0);
  CHECK(f.dma.at("nic_reads_back")["landed_bytes"] == 1 << 20);
  CHECK(run["program"]["regcache"]["host_pins"] == 3);
}

TEST_CASE("host memory: behind a translating IOMMU both drivers map the host pages they use",
          "[cli][cuda][host]") {
  // The NIC's driver maps the pages it pinned for the NIC, the CUDA driver its page-locked
  // memory for the GPU: every byte lands, and reads back, through I/O virtual addresses.
  const std::string file = in_build("host_memory_iommu.json");
  auto r = run_cli("run tests/data/scenarios/host_memory_iommu.yaml --json " + file);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const figures f = figures_of(read_json(file)["runs"][0]);
  CHECK(f.dma.at("nic_to_host")["landed_bytes"] == 1 << 20);
  CHECK(f.dma.at("nic_to_host")["failed_bytes"] == 0);
  CHECK(f.dma.at("nic_reads_back")["stale_bytes"] == 0);
}
