// CUDA copies as a program makes them (docs/architecture.md, "CUDA copy costs"): what each
// of the GPU's copy costs adds to a copy's time, how a copy queued behind another hides its
// launch, and an asynchronous copy into pinned memory that completes after its call returns.
// The costs are the H200 preset's (topologies/devices/h200.yaml); each figure is checked
// against a run with all of them zero, so the DMA's own time drops out.
#include <catch2/catch.hpp>

#include <map>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_harness.h"

using nlohmann::json;
using p2psim::test::in_build;
using p2psim::test::read_json;
using p2psim::test::run_cli;
using p2psim::test::seconds_by_transfer;

namespace {

const char* scenario = "tests/data/scenarios/cuda_copy_costs.yaml";
// The H200 preset's costs, in seconds.
constexpr double submit = 2.2e-6, launch = 0.15e-6, completion = 1.45e-6, sync_return = 3.9e-6;

// Each named copy's time in seconds.
std::map<std::string, double> copy_seconds(const std::string& sets, const std::string& tag) {
  const std::string file = in_build("cuda_copy_costs_" + tag + ".json");
  auto r = run_cli("run " + std::string(scenario) + sets + " --json " + file);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const auto t = seconds_by_transfer(read_json(file), true);
  REQUIRE(t.size() == 5);
  return t;
}

}  // namespace

TEST_CASE("CUDA copies: the costs add to a copy as the preset gives them", "[cli][cuda]") {
  const auto with = copy_seconds("", "with");
  const auto without = copy_seconds(
      " --set device.gpu0.copy_submit=0us --set device.gpu0.copy_launch=0us"
      " --set device.gpu0.copy_completion=0us --set device.gpu0.copy_sync_return=0us",
      "without");
  const double dma = without.at("alone");  // the copy engine's TLPs alone
  CHECK(dma > 1e-6);
  // A DMA's own time moves by a fraction of a nanosecond with when it starts (the links
  // round to picoseconds); the costs are microseconds.
  const double ns = 1e-9;
  // Alone, an asynchronous copy is timed to its completion: every cost but the return.
  CHECK(with.at("alone") == Approx(dma + submit + launch + completion).margin(ns));
  // A synchronous one to its return.
  CHECK(with.at("sync") == Approx(dma + submit + launch + completion + sync_return).margin(ns));
  CHECK(without.at("sync") == Approx(dma).margin(ns));
  CHECK(without.at("second") == Approx(2 * dma).margin(ns));  // no costs: one after the other
  // Queued behind `first`, `second` was launched while `first` ran: it starts when `first`
  // completes, and its call came one submission after `first`'s.
  CHECK(with.at("first") == Approx(with.at("alone")).margin(ns));
  CHECK(with.at("second") == Approx(with.at("first") + dma + completion - submit).margin(ns));
  // Into pinned memory, an asynchronous copy returns after its submission and runs on; its
  // bytes were checked when it was done (the run has no errors: exit code 0).
  CHECK(with.at("back") > submit + launch);
}

TEST_CASE("CUDA copies: the report lists the named copies, and JSON says what each was",
          "[cli][cuda]") {
  const std::string file = in_build("cuda_copy_costs_report.json");
  auto r = run_cli("run " + std::string(scenario) + " --json " + file);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("CUDA copies") != std::string::npos);
  CHECK(r.out.find("cuMemcpyHtoDAsync") != std::string::npos);
  // Copies are not P2P transfers: no bandwidth matrix is built from them.
  CHECK(r.out.find("Unidirectional P2P") == std::string::npos);
  const json j = read_json(file);
  int copies = 0;
  for (const json& b : j["bandwidth"]) {
    if (!b.contains("call")) continue;
    ++copies;
    CHECK(b["src"] == "gpu0");
    if (b["transfer"] == "back") {
      CHECK(b["call"] == "cuMemcpyDtoH");
      CHECK(b["async"] == true);
      CHECK(b["dst"] == "cpu0");
      CHECK(b["op"] == "write");
    }
  }
  CHECK(copies == 5);
}

TEST_CASE("CUDA copies: a copy within one GPU takes its start and its bytes at the copy rate",
          "[cli][cuda]") {
  // scenarios/validation/h200_device_copies.yaml: `ahead` is timed from its call, `cold`,
  // queued behind it on one stream, from its completion (`after`), as an event recorded
  // between them measures: its submission and launch ran while `ahead` did. The run checks
  // the bytes copied (exit 0).
  auto times = [](const std::string& sets, const std::string& tag) {
    const std::string file = in_build("cuda_device_copies_" + tag + ".json");
    auto r = run_cli("run scenarios/validation/h200_device_copies.yaml" + sets + " --json " + file);
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    return seconds_by_transfer(read_json(file), true);
  };
  const double mib = 1 << 20, ahead_bytes = 16 * mib, cold_bytes = 4 * mib;
  // The H200 preset: 2.1 us to start, 2.32 TB/s.
  const auto h200 = times("", "h200");
  const double start = 2.1e-6, rate = 2320e9;
  CHECK(h200.at("cold") == Approx(start + cold_bytes / rate + completion).margin(1e-9));
  CHECK(h200.at("ahead") ==
        Approx(submit + launch + start + ahead_bytes / rate + completion).margin(1e-9));
  // Without a copy rate of its own a GPU copies at half its memory's bandwidth (each byte read
  // and written), and without a start the bytes move at once.
  const auto plain = times(
      " --set device.gpu0.vram_copy_bandwidth=0 --set device.gpu0.vram_bandwidth=1000GB/s"
      " --set device.gpu0.copy_within_start=0us",
      "plain");
  CHECK(plain.at("cold") == Approx(cold_bytes / 500e9 + completion).margin(1e-9));
}
