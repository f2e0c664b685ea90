// PCIe does not require root complexes to route peer-to-peer (GPUDirect RDMA 13.3, 5.4;
// docs/design.md, "Topology classes"): a platform that does not forward P2P reads answers them with
// Unsupported Request. The requester sees error completions, no byte reaches memory, and
// the run reports what was refused.
#include <catch2/catch.hpp>

#include "tests/models/harness.h"

TEST_CASE("P2P read on a platform that does not route it gets Unsupported Request", "[ur]") {
  auto r = p2psim::test::run_scenario("tests/data/scenarios/single_rc.yaml",
                                      {"socket.cpu0.platform=arrow_lake"});
  const auto& write = p2psim::test::transfer(r, "write");
  const auto& read = p2psim::test::transfer(r, "read");
  CHECK(write.failed_bytes == 0);  // writes are routed on this platform
  CHECK(write.mismatched_bytes == 0);
  CHECK(write.bytes == 4u << 20);
  CHECK(read.failed_bytes == 4u << 20);
  CHECK(read.bytes == 0);
  CHECK(read.mismatched_bytes == 0);  // nothing reached the destination
  const auto& nic = r.stats["devices"]["nic0"]["requester"];
  CHECK(nic["error_completions"] == nic["read_requests"]);
  CHECK(r.stats["root_complexes"]["cpu0"]["p2p_requests"].get<uint64_t>() > 0);
  bool named = false;
  for (const auto& e : r.errors) named |= e.find("Unsupported Request") != std::string::npos;
  CHECK(named);
}

TEST_CASE("P2P write to an unmapped BAR1 page is dropped and counted", "[ur]") {
  // A DMA engine writes to gpu0's BAR1 beyond the region the runner mapped: the GPU refuses
  // it (unmapped page), so the bytes are reported refused and VRAM is untouched.
  auto r = p2psim::test::run_scenario("tests/data/scenarios/unmapped_bar1.yaml");
  const auto& w = p2psim::test::transfer(r, "stray_write");
  CHECK(w.failed_bytes == 65536);
  CHECK(w.bytes == 0);
  CHECK(r.stats["devices"]["gpu0"]["bar1_unmapped_accesses"].get<uint64_t>() == 65536 / 256);
}
