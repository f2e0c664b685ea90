// Copies on several streams of one GPU (docs/architecture.md, "CUDA copy costs"): an engine
// runs one copy at a time whichever stream it is on, and turns to another stream's copy
// `copy_switch` after the one before completes; a copy behind one of its own stream starts at
// that one's completion; the two directions have engines of their own. Measured on an H200
// (tools/hw_probe/streams_probe.cu); the costs are the H200 preset's
// (topologies/devices/h200.yaml), and each figure is checked against the copy's DMA time alone.
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

const char* scenario = "tests/data/scenarios/cuda_streams.yaml";
// The H200 preset's costs, in seconds.
constexpr double submit = 2.2e-6, launch = 0.15e-6, completion = 1.45e-6, switch_s = 1.8e-6;
constexpr double ns = 1e-9;

// Each named copy's time in seconds; the run must check every byte it copied back (exit 0).
std::map<std::string, double> copy_seconds(const std::string& sets, const std::string& tag) {
  const std::string file = in_build("cuda_streams_" + tag + ".json");
  auto r = run_cli("run " + std::string(scenario) + sets + " --json " + file);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const auto t = seconds_by_transfer(read_json(file), true);
  REQUIRE(t.size() == 6);
  return t;
}

}  // namespace

TEST_CASE("CUDA streams: one engine runs one stream's copy after another's", "[cli][cuda]") {
  const auto t = copy_seconds("", "preset");
  const double dma = t.at("a") - submit - launch - completion;  // a ran alone
  CHECK(dma > 1e-6);
  // `b` came to the engine while `a` ran: it starts copy_switch after `a` completes.
  CHECK(t.at("b") == Approx(t.at("a") + switch_s + dma + completion).margin(ns));
  // `d`, behind `c` on the same stream, starts when `c` completes, with no switch.
  CHECK(t.at("d") == Approx(t.at("c") + dma + completion).margin(ns));
  // The other direction has an engine of its own: `down` does not wait for `up`. Its DMA
  // shares the link with `up`'s, so it is within a few percent of its time alone, and far
  // below waiting for `up` (checked below with one engine).
  const double down_alone = submit + launch + completion;
  CHECK(t.at("down") > down_alone);
  CHECK(t.at("down") < down_alone + 2 * dma * 1.05);
}

TEST_CASE("CUDA streams: with one engine both directions take turns", "[cli][cuda]") {
  const auto three = copy_seconds("", "three");
  const auto one = copy_seconds(" --set device.gpu0.copy_engines=1", "one");
  // `down` was called one submission after `up`, waited for it to complete, then switched.
  const double up_left = three.at("up") - submit;
  CHECK(one.at("down") > up_left + switch_s + launch);
  CHECK(one.at("down") ==
        Approx(up_left + switch_s + (three.at("down") - submit - launch)).margin(0.05e-6));
}

TEST_CASE("CUDA streams: without engines modelled, copies on two streams run at once",
          "[cli][cuda]") {
  // copy_engines 0: `b` shares the link with `a` instead of waiting for it; the bytes of both
  // are checked (each copy stages its bytes in host memory of its own: the run exits 0).
  const auto t = copy_seconds(" --set device.gpu0.copy_engines=0", "none");
  const double dma = t.at("a") - submit - launch - completion;
  CHECK(t.at("b") < t.at("a") + dma);
  CHECK(t.at("b") > t.at("a"));
}

TEST_CASE("CUDA streams: a stream of a destroyed context or of another process is refused",
          "[cli][cuda]") {
  // A stream of another context of the same process works (the scenario's first copy).
  // Each step says the CUresult it must return; any other fails the run (exit code 1).
  auto r = run_cli("run tests/data/scenarios/cuda_streams_misuse.yaml");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("not as expected") == std::string::npos);
}

TEST_CASE("CUDA streams: copies at once wait for a staging buffer when host memory holds no more",
          "[cli][cuda]") {
  // 512 MiB of host memory holds two 256 MiB staging buffers: of four copies from pageable
  // memory on four streams, without engines to order them, the third starts when the first
  // has given its buffer back. (Copies from page-locked memory stage nothing.) The bytes are
  // checked by the copies back (exit code 0): none shares a buffer.
  const std::string file = in_build("cuda_streams_staging.json");
  auto r = run_cli(
      "run tests/data/scenarios/cuda_staging_wait.yaml --set socket.cpu0.memory=512MiB "
      "--set device.gpu0.copy_engines=0 --json " +
      file);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const auto t = seconds_by_transfer(read_json(file), true);
  const double dma = t.at("h2d_0") - launch - completion;  // it ran first, alone
  CHECK(t.at("h2d_2") >= t.at("h2d_0") + dma);
  CHECK(t.at("h2d_3") >= t.at("h2d_1") + dma);
}
