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
