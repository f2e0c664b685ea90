// The IOMMU in the fabric (GPUDirect RDMA 13.3, 5.4 IOMMUs: GPUDirect RDMA needs the IOMMU
// off or in pass-through, or I/O virtual addresses for the peer; docs/design.md, "Topology
// classes": with a translating IOMMU, P2P under a switch goes up to the root complex).
#include <catch2/catch.hpp>

#include "tests/models/harness.h"

using p2psim::test::run_scenario;
using p2psim::test::transfer;

namespace {

const char* const k_transfers[] = {"nic_writes_host", "nic_reads_host", "nic_writes_gpu",
                                   "nic_reads_gpu", "gpu_writes_host"};

void check_intact(const p2psim::core::run_result& r) {
  for (const char* name : k_transfers) {
    const auto& b = transfer(r, name);
    INFO(name);
    CHECK(b.failed_bytes == 0);
    CHECK(b.mismatched_bytes == 0);
    CHECK(b.bytes == (std::string(name) == "nic_reads_host"    ? 1000000u
                      : std::string(name) == "gpu_writes_host" ? 256u << 10
                                                               : 1u << 20));
  }
  CHECK(r.errors.empty());
}

}  // namespace

TEST_CASE("IOMMU pass-through: DMA to host memory and BAR1 is untouched", "[iommu]") {
  // 5.4 IOMMUs: pass-through is 1:1, so GPUDirect RDMA works as without an IOMMU.
  auto r =
      run_scenario("tests/data/scenarios/iommu_dma.yaml", {"socket.cpu0.iommu.mode=passthrough"});
  check_intact(r);
  const auto& rc = r.stats["root_complexes"]["cpu0"];
  CHECK(rc["iommu_mode"] == "passthrough");
  CHECK(rc["iommu_faults"] == 0);
  CHECK(rc["iommu_walk_wait_ps"] == 0);
  for (const char* dev : {"nic0", "gpu0"}) {
    const auto& io = r.stats["devices"][dev]["iommu"];
    INFO(dev);
    CHECK(io["translations"].get<uint64_t>() > 0);  // every request passed the IOMMU
    CHECK(io["iotlb_misses"] == 0);                 // and cost nothing
    CHECK(io["faults"] == 0);
    CHECK(io["maps"] == 0);  // nothing to map: the runner uses physical addresses
  }
}

TEST_CASE("IOMMU translating: mapped DMA arrives intact through IOVAs", "[iommu]") {
  // 5.4 IOMMUs: with translation the peer must be given I/O virtual addresses; the runner
  // maps each target in the initiator's domain as a driver's dma_map does.
  auto r =
      run_scenario("tests/data/scenarios/iommu_dma.yaml", {"socket.cpu0.iommu.mode=translating"});
  check_intact(r);
  const auto& rc = r.stats["root_complexes"]["cpu0"];
  CHECK(rc["iommu_faults"] == 0);
  CHECK(rc["iommu_walk_wait_ps"].get<uint64_t>() > 0);
  CHECK(rc["p2p_requests"].get<uint64_t>() > 0);  // BAR1 reached at its physical address
  const auto& nic = r.stats["devices"]["nic0"]["iommu"];
  // 4 KiB pages touched once each, in order: one miss per page, 1 MiB = 256 pages and
  // 1000000 bytes = 245 pages.
  CHECK(nic["iotlb_misses"] == 3 * 256 + 245);
  CHECK(nic["iotlb_hits"].get<uint64_t>() > nic["iotlb_misses"].get<uint64_t>());
  CHECK(nic["faults"] == 0);
  CHECK(nic["maps"] == 4);
  CHECK(nic["unmaps"] == 4);
  CHECK(nic["mapped_pages"] == 0);  // every mapping was torn down
  const auto& gpu = r.stats["devices"]["gpu0"]["iommu"];
  CHECK(gpu["iotlb_misses"] == 64);  // 256 KiB of host memory
  CHECK(gpu["maps"] == 1);
}

TEST_CASE("IOMMU translating: an IOTLB miss adds the page walk to a small read", "[iommu]") {
  // cpu0 translates and cpu1 passes through, with identical links and memories: each probe
  // maps a fresh IOVA, so its one read misses the IOTLB and waits miss_latency (300 ns).
  auto r = run_scenario("tests/data/scenarios/iommu_latency.yaml");
  REQUIRE(r.latency.size() == 2);
  const auto& translated = r.latency[0];
  const auto& identity = r.latency[1];
  CHECK(translated.src == "nic0");
  CHECK(identity.src == "nic1");
  CHECK(translated.ns - identity.ns == Approx(300).margin(2));
  const double bw_delta_ns =
      (transfer(r, "translated").seconds - transfer(r, "passthrough").seconds) * 1e9;
  CHECK(bw_delta_ns == Approx(300).margin(2));
  const auto& nic0 = r.stats["devices"]["nic0"]["iommu"];
  CHECK(nic0["iotlb_misses"] == 5);  // 1 bandwidth repetition + 4 latency probes
  CHECK(nic0["iotlb_hits"] == 0);
  CHECK(r.stats["devices"]["nic1"]["iommu"]["iotlb_misses"] == 0);
  CHECK(r.stats["root_complexes"]["cpu0"]["iommu_walk_wait_ps"] == 5 * 300000);
  CHECK(r.errors.empty());
}

TEST_CASE("IOMMU translating: DMA to an unmapped address is blocked", "[iommu]") {
  // The NIC uses physical addresses it was never given (iommu_map: false): every request is
  // a DMA remapping fault. Principle 8 of docs/design.md, "Principles": reported and counted,
  // never an abort.
  auto r = run_scenario("tests/data/scenarios/iommu_blocked.yaml",
                        {"socket.cpu0.iommu.mode=translating"});
  for (const char* name : {"write_host", "read_gpu"}) {
    const auto& b = transfer(r, name);
    INFO(name);
    CHECK(b.failed_bytes == 64u << 10);
    CHECK(b.bytes == 0);
    CHECK(b.mismatched_bytes == 0);  // the destination is unchanged: no byte got through
  }
  const auto& rc = r.stats["root_complexes"]["cpu0"];
  CHECK(rc["memory_writes"] == 0);
  CHECK(rc["p2p_requests"] == 0);
  // 64 KiB of writes in 256 B TLPs plus 64 KiB of reads in 512 B requests.
  CHECK(rc["iommu_faults"] == 256 + 128);
  CHECK(r.stats["devices"]["nic0"]["iommu"]["faults"] == 256 + 128);
  const auto& req = r.stats["devices"]["nic0"]["requester"];
  CHECK(req["error_completions"] == req["read_requests"]);  // reads got Unsupported Request
  CHECK(r.stats["devices"]["gpu0"]["bar1_reads"] == 0);
  bool named = false;
  for (const auto& e : r.errors) named |= e.find("IOMMU of cpu0") != std::string::npos;
  CHECK(named);
}

TEST_CASE("IOMMU translating: P2P under a switch goes through the root complex", "[iommu]") {
  // docs/design.md, "Topology classes": with a translating IOMMU, P2P under a switch goes up to
  // the root complex
  // (the switch redirects peer requests as with ACS), where it is translated and sent back.
  auto r = run_scenario("tests/data/scenarios/iommu_switch_p2p.yaml",
                        {"socket.cpu0.iommu.mode=translating"});
  for (const char* name : {"write", "read"}) {
    const auto& b = transfer(r, name);
    INFO(name);
    CHECK(b.failed_bytes == 0);
    CHECK(b.mismatched_bytes == 0);
    CHECK(b.bytes > 0);
  }
  const auto& rc = r.stats["root_complexes"]["cpu0"];
  CHECK(rc["p2p_requests"].get<uint64_t>() > 0);
  CHECK(r.stats["links"]["sw0"]["upstream"]["payload_bytes"].get<uint64_t>() >= 1u << 20);
  // The stray write used the GPU's physical BAR1 address, which the switch would have sent
  // straight across: it was redirected up and blocked by the IOMMU instead.
  const auto& stray = transfer(r, "stray_write");
  CHECK(stray.failed_bytes == 64u << 10);
  CHECK(stray.mismatched_bytes == 0);
  CHECK(r.stats["switches"]["sw0"]["acs_redirected_tlps"] == 256);
  CHECK(rc["iommu_faults"] == 256);
}
