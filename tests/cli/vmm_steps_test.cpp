// CUDA VMM memory in a program (docs/formats-scenario.md, "VMM";
// tests/data/scenarios/vmm_steps.yaml): what driver 580 refuses, a NIC's DMAs into and out of
// it through the registration cache checked byte for byte, the free callback cuMemUnmap runs,
// and the bytes of a handle following it to another VA.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_harness.h"

TEST_CASE(
    "VMM steps: the NIC pins mapped handles through the cache and cuMemUnmap revokes the "
    "pin with every byte checked where the VA reaches",
    "[cli][vmm]") {
  const std::string file = std::string(P2PSIM_BUILD_DIR) + "/vmm_steps.json";
  auto r = p2psim::test::run_cli("run tests/data/scenarios/vmm_steps.yaml --json " + file);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("Program: 37 steps, all as expected") != std::string::npos);
  std::ifstream f(file);
  const auto program = nlohmann::json::parse(f)["runs"][0]["program"];
  CHECK(program["driver"]["pins"] == 2);           // h1, then h2 at the same VA
  CHECK(program["driver"]["callbacks"] == 2);      // each unmap revoked the cache's pin (5.3)
  CHECK(program["driver"]["refused_calls"] == 1);  // the handle made without gpuDirectRDMACapable
  for (const auto& d : program["dma"]) {
    CHECK(d["mismatched_bytes"] == 0);
    CHECK(d["landed_bytes"] == (d["name"] == "into_plain" ? 0 : d["bytes"].get<uint64_t>()));
  }
}

// On the dma-buf path the cache exports instead of pinning, and driver 580 exports VMM memory
// made without gpuDirectRDMACapable (h200_cuda13_dmabuf.txt): the DMA nv-p2p refuses lands.
TEST_CASE(
    "VMM steps on the dma-buf path: memory nv-p2p refuses for want of gpuDirectRDMACapable "
    "exports and the DMA lands",
    "[cli][vmm][dma-buf]") {
  const std::string file = std::string(P2PSIM_BUILD_DIR) + "/vmm_steps_dma_buf.json";
  auto r = p2psim::test::run_cli(
      "run tests/data/scenarios/vmm_steps.yaml --set peer_driver.path=dma_buf --json " + file);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);  // the one step that expected -EINVAL
  CHECK(r.out.find("Program: 37 steps, 1 not as expected") != std::string::npos);
  CHECK((r.out + r.err).find("step 24 (app dma) returned ok, expected -EINVAL") !=
        std::string::npos);
  std::ifstream f(file);
  const auto program = nlohmann::json::parse(f)["runs"][0]["program"];
  CHECK(program["driver"]["pins"] == 0);
  CHECK(program["driver"]["dma_buf_exports"] == 3);  // h1, h2 at h1's VA, and plain
  for (const auto& d : program["dma"]) {
    CHECK(d["mismatched_bytes"] == 0);
    CHECK(d["landed_bytes"] == d["bytes"]);
  }
}
