// Driver regressions written as scenarios (tests/data/scenarios/driver_regression_*.yaml): the
// nv-p2p and pointer attribute steps run through the CLI, every step returns what its
// `expect` says, and a wrong expectation, a failed value check, a callback count that is off
// or a DMA the IOMMU blocks fails the run (exit 1) naming the step's file:line.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_harness.h"

namespace {

using nlohmann::json;
using p2psim::test::run_cli;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Runs a scenario of tests/data/scenarios and returns its program's JSON (exit code 0).
json run_regression(const std::string& name) {
  const std::string out = std::string(P2PSIM_BUILD_DIR) + "/" + name + ".json";
  auto r = run_cli("run tests/data/scenarios/" + name + ".yaml --json " + out, 120);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.out, "all as expected"));
  std::ifstream f(out);
  json program = json::parse(f)["runs"][0]["program"];
  for (const auto& s : program["steps"]) {
    INFO(s.dump());
    CHECK(s["ok"] == true);
    CHECK(s["result"] == s["expect"]);
  }
  return program;
}

const json& step(const json& program, size_t index) {
  return program["steps"].at(index);
}

bool has_event(const json& program, const std::string& what, const std::string& detail) {
  for (const auto& e : program["driver"]["events"])
    if (contains(e["what"], what) && contains(e["detail"], detail)) return true;
  return false;
}

// A scenario written for one test, with its topology named by absolute path.
std::string write_scenario(const std::string& name, const std::string& topology,
                           const std::string& program) {
  const std::string path = std::string(P2PSIM_BUILD_DIR) + "/" + name + ".yaml";
  std::ofstream f(path);
  f << "name: " << name << "\ntopology: " << P2PSIM_SOURCE_DIR << "/topologies/" << topology
    << "\nprocesses: [app]\nprogram:\n"
    << "  - {process: app, call: cuInit}\n"
    << "  - {process: app, call: cuCtxCreate, device: gpu0}\n"
    << "  - {process: app, call: cuMemAlloc, name: buf, size: 1MiB}\n"
    << program;
  return path;
}

}  // namespace

TEST_CASE("driver regression: a persistent pin outlives cuMemFree and keeps its frames",
          "[cli][driver_regression]") {
  json p = run_regression("driver_regression_persistent");
  REQUIRE(p["steps"].size() == 22);
  CHECK(step(p, 4)["result"] == "-EINVAL");  // get_pages_persistent with flags
  // The new allocation has the freed VA (the step's value: {buffer: old}) but another ID.
  CHECK(step(p, 10)["call"] == "cuPointerGetAttribute");
  CHECK(step(p, 11)["values"]["BUFFER_ID"] != step(p, 3)["values"]["BUFFER_ID"]);
  // Every DMA through the pin landed whole, byte for byte in the pinned frames, including the
  // ones after the free; the cuMemcpyDtoH of the new buffer found its own bytes (no error).
  REQUIRE(p["dma"].size() == 3);
  for (const auto& d : p["dma"]) {
    INFO(d.dump());
    CHECK(d["landed_bytes"] == d["bytes"]);
    CHECK(d["mismatched_bytes"] == 0);
  }
  CHECK(p["dma"][1]["bytes"] == 1024 * 1024);
  CHECK(p["driver"]["persistent_pins"] == 1);
  CHECK(p["driver"]["callbacks"] == 0);
  CHECK(has_event(p, "nvidia_p2p_put_pages", "persistent"));
  CHECK(has_event(p, "nvidia_p2p_put_pages_persistent", "not a live page table"));
}

TEST_CASE(
    "driver regression: tokens read by one process pin for another and a neighbour free "
    "revokes nothing",
    "[cli][driver_regression]") {
  json p = run_regression("driver_regression_tokens");
  const json& attrs = step(p, 3)["values"];
  CHECK(attrs["MEMORY_TYPE"] == 2);  // CU_MEMORYTYPE_DEVICE
  CHECK(attrs["RANGE_SIZE"] == 1024 * 1024);
  CHECK(attrs["DEVICE_POINTER"].get<uint64_t>() ==
        attrs["RANGE_START_ADDR"].get<uint64_t>() + 4096);
  // Driver 580 hands out p2pToken 0: the vaSpaceToken alone names the context.
  CHECK(step(p, 4)["values"]["P2P_TOKENS"]["p2pToken"].get<uint64_t>() == 0);
  CHECK(step(p, 4)["values"]["P2P_TOKENS"]["vaSpaceToken"].get<uint64_t>() != 0);
  // Without tokens and with forged ones, the other process gets -EINVAL; with the owner's, a pin.
  CHECK(step(p, 10)["result"] == "-EINVAL");
  CHECK(step(p, 11)["result"] == "-EINVAL");
  CHECK(step(p, 12)["result"] == "ok");
  CHECK(has_event(p, "nvidia_p2p_get_pages", "not all live GPU memory of process 101"));
  CHECK(has_event(p, "nvidia_p2p_get_pages", "no live context has these tokens"));
  // The neighbour's free left the pin; the free of the pinned allocation revoked it, once.
  CHECK(p["driver"]["callbacks"] == 1);
  for (const auto& d : p["dma"]) CHECK(d["mismatched_bytes"] == 0);
}

TEST_CASE("driver regression: dma_map_pages through a translating IOMMU",
          "[cli][driver_regression]") {
  json p = run_regression("driver_regression_iommu");
  REQUIRE(p["dma"].size() == 2);
  for (const auto& d : p["dma"]) {
    CHECK(d["landed_bytes"] == d["bytes"]);
    CHECK(d["mismatched_bytes"] == 0);
  }
  CHECK(has_event(p, "nvidia_p2p_dma_unmap_pages", "already unmapped"));
  CHECK(has_event(p, "nvidia_p2p_dma_map_pages", "not a live page table"));

  // The same DMA without the mapping: BAR1 addresses the IOMMU does not translate. Refused.
  const std::string path = write_scenario("regression_unmapped_iommu", "single_rc_iommu.yaml",
                                          "  - {process: app, call: nvidia_p2p_get_pages, pin: p, "
                                          "buffer: buf}\n"
                                          "  - {process: app, call: dma, pin: p, peer: nic0, op: "
                                          "write, name: unmapped}\n");
  auto r = run_cli("run " + path, 120);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.out + r.err, "unmapped: 1048576 of 1048576 bytes refused by the fabric"));
}

TEST_CASE("driver regression: callbacks that count and call back into the API",
          "[cli][driver_regression]") {
  json p = run_regression("driver_regression_callbacks");
  CHECK(p["driver"]["callbacks"] == 4);
  CHECK(has_event(p, "nvidia_p2p_get_pages", "NULL free_callback"));
  CHECK(has_event(p, "nvidia_p2p_put_pages", "inside its own free callback"));
  CHECK(has_event(p, "nvidia_p2p_put_pages", "late"));
}

TEST_CASE("driver regression: a wrong expectation fails the run at the step's line",
          "[cli][driver_regression]") {
  const std::string path = write_scenario(
      "regression_mismatch", "switch_only.yaml",
      "  - {process: app, call: nvidia_p2p_get_pages, pin: p, buffer: buf, callback: count}\n"
      "  - {process: app, call: nvidia_p2p_get_pages, pin: q, buffer: buf, offset: 4KiB, size: "
      "64KiB}\n"
      "  - {process: app, call: cuPointerGetAttribute, buffer: buf, attribute: BUFFER_ID, value: "
      "99}\n"
      "  - {process: app, call: cuMemFree, buffer: buf}\n"
      "  - {call: callbacks, pin: p, count: 2}\n");
  auto r = run_cli("run " + path, 120);
  const std::string text = r.out + r.err;
  INFO(text);
  CHECK(r.exit_code == 1);
  CHECK(contains(text,
                 "regression_mismatch.yaml:9:5: step 4 (app nvidia_p2p_get_pages) "
                 "returned -EINVAL, expected ok"));
  CHECK(contains(text,
                 "regression_mismatch.yaml:10:5: step 5 (app cuPointerGetAttribute): "
                 "BUFFER_ID is 1, expected 99"));
  CHECK(contains(text,
                 "regression_mismatch.yaml:12:5: step 7 ( callbacks): the free callback "
                 "of pin 'p' ran 1 times, expected 2"));
}
