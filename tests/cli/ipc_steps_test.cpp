// CUDA IPC in a program (docs/formats-scenario.md, "CUDA IPC";
// tests/data/scenarios/ipc_steps.yaml): two processes, one exporting a buffer and one opening
// it, copies through both checked against the same bytes, the NIC's driver refused the opened
// memory, and the owner's free while it is open.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "tests/cli/cli_harness.h"

TEST_CASE(
    "IPC steps: another process opens the buffer and both see each other's bytes through "
    "the open and the owner's free",
    "[cli][ipc]") {
  const std::string file = std::string(P2PSIM_BUILD_DIR) + "/ipc_steps.json";
  auto r = p2psim::test::run_cli("run tests/data/scenarios/ipc_steps.yaml --json " + file);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("Program: 33 steps, all as expected") != std::string::npos);
  std::ifstream f(file);
  const auto program = nlohmann::json::parse(f)["runs"][0]["program"];
  CHECK(program["driver"]["refused_calls"] == 1);  // the pin of the opened memory
  bool refused_ipc = false;
  for (const auto& e : program["driver"]["events"])
    refused_ipc |= e["detail"].get<std::string>().find("cuIpcOpenMemHandle") != std::string::npos;
  CHECK(refused_ipc);
  for (const auto& d : program["dma"]) {
    CHECK(d["mismatched_bytes"] == 0);
    CHECK(d["landed_bytes"] == d["bytes"]);
  }
}

// Without the owner's cuCtxSynchronize, its pageable cuMemcpyHtoD has returned with its DMA
// still under way (the bytes are staged), and the other process reads what was there before.
TEST_CASE("IPC steps: a copy the owner did not synchronize is not yet there for the other process",
          "[cli][ipc]") {
  std::ifstream in(std::string(P2PSIM_SOURCE_DIR) + "/tests/data/scenarios/ipc_steps.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string yaml = std::regex_replace(
      text.str(), std::regex(R"(  - \{process: owner, call: cuCtxSynchronize\}[^\n]*\n)"), "");
  yaml = std::regex_replace(yaml, std::regex(R"(\.\./\.\./\.\./topologies)"),
                            std::string(P2PSIM_SOURCE_DIR) + "/topologies");
  REQUIRE(yaml != text.str());
  const std::string path = std::string(P2PSIM_BUILD_DIR) + "/ipc_steps_unsynchronized.yaml";
  std::ofstream(path) << yaml;
  auto r = p2psim::test::run_cli("run " + path);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("Program: 32 steps, all as expected") != std::string::npos);
  CHECK((r.out + r.err).find("cuMemcpyDtoH of pa read") != std::string::npos);
}
