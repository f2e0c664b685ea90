// p2psim bench as a user runs it, with tiny sizes: every figure of every case in the JSON, the
// floor's exact counts, the scaling study's repetitions, and bad options (exit 2). No timed
// assertions: machines are noisy, so speed figures belong in docs/benchmarks.md.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_harness.h"

using nlohmann::json;
using p2psim::test::in_build;
using p2psim::test::read_json;
using p2psim::test::run_cli;
namespace fs = std::filesystem;

namespace {

// Runs `p2psim bench ARGS --json FILE` (FILE in the build tree), requires it to succeed and
// returns what it wrote, with its output for the checks on the table.
json bench_json(const std::string& args, const std::string& name, std::string* out = nullptr) {
  const std::string file = in_build(name);
  auto r = run_cli("bench " + args + " --json " + file);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  if (out) *out = r.out;
  return read_json(file);
}

// 1 GiB cases become 256 KiB, the matrix's 8 MiB per pair one 4 KiB page.
const std::string tiny = " --size-factor 0.000244140625";

}  // namespace

TEST_CASE("bench: the JSON has every figure of every case at both fidelities", "[cli][bench]") {
  std::string out;
  json j = bench_json(tiny, "bench.json", &out);
  CHECK(j["fidelities"] == json({"tlp", "burst"}));
  REQUIRE(j["cases"].size() == 4);
  std::vector<std::string> names;
  for (const auto& c : j["cases"]) {
    names.push_back(c["name"]);
    INFO(c["name"]);
    for (const char* fidelity : {"tlp", "burst"}) {
      const json& run = c[fidelity];
      CHECK(run["fidelity"] == fidelity);
      for (const char* key : {"tlps", "hops", "simulated_ns", "peak_rss_kib", "bytes"})
        CHECK(run[key].get<uint64_t>() > 0);
      for (const char* key :
           {"wall_seconds", "data_wall_seconds", "tlps_per_second", "hops_per_second", "gbps"})
        CHECK(run[key].get<double>() >= 0);
      CHECK(run["hops"].get<uint64_t>() >= run["tlps"].get<uint64_t>());
      CHECK(c["percent_of_floor"][fidelity].is_number());
    }
    CHECK(c["burst_speedup"].is_number());
    CHECK(c["gbps_difference_percent"].is_number());
    const json& floor = c["floor"];
    CHECK(floor["transactions"] == c["tlp"]["tlps"]);
    CHECK(floor["hops"] == c["tlp"]["hops"]);  // the same hops, whole per TLP or not
    for (const char* key : {"wall_seconds", "hops_per_second", "simulated_ns", "peak_rss_kib"})
      CHECK(floor[key].is_number());
  }
  CHECK(names == std::vector<std::string>{"write_1g", "read_1g", "qpi_write_1g", "matrix_8gpu"});
  // The matrix case moves a page per pair, 132 pairs.
  CHECK(j["cases"][3]["tlp"]["bytes"] == 132 * 4096);
  CHECK(out.find("burst/tlp") != std::string::npos);
  CHECK(out.find("Floor:") != std::string::npos);
}

TEST_CASE("bench: one fidelity and chosen cases", "[cli][bench]") {
  json j = bench_json("--fidelity burst --cases read_1g" + tiny, "bench_one.json");
  REQUIRE(j["cases"].size() == 1);
  CHECK(j["cases"][0]["name"] == "read_1g");
  CHECK(j["cases"][0]["tlp"].is_null());
  CHECK(j["cases"][0]["burst"]["bytes"] == 256 * 1024);
  CHECK(j["cases"][0]["burst_speedup"].is_null());
  CHECK(j["cases"][0]["floor"]["transactions"] == j["cases"][0]["burst"]["tlps"]);
}

TEST_CASE("bench: --repeat runs each case and floor again and keeps the fastest", "[cli][bench]") {
  std::string out;
  json j =
      bench_json("--fidelity tlp --cases write_1g --repeat 3" + tiny, "bench_repeat.json", &out);
  CHECK(j["repeat"] == 3);
  CHECK(j["cpu"].is_number());  // pinned to the CPU it started on
  REQUIRE(j["cases"].size() == 1);
  CHECK(j["cases"][0]["tlp"]["bytes"] == 256 * 1024);  // the same work, whichever run it was
  CHECK(j["cases"][0]["floor"]["hops"] == j["cases"][0]["tlp"]["hops"]);
  CHECK(out.find("fastest of 3 runs each") != std::string::npos);
}

TEST_CASE("bench: the floor reports exactly the transactions and hops asked for",
          "[cli][bench][floor]") {
  const std::string file = in_build("bench_floor.json");
  auto r = run_cli("bench --floor 1000,3000 --result-file " + file);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  json j = read_json(file);
  CHECK(j["transactions"] == 1000);
  CHECK(j["hops"] == 3000);
  CHECK(j["hops_per_transaction"] == 3);
  // The last transaction leaves the source at 999 x 16 ns and takes 3 hops of 20 ns.
  CHECK(j["simulated_ns"] == 999 * 16 + 3 * 20);

  // 2.5 hops per transaction: every second one takes 3 hops, the others 2, the last a long one.
  r = run_cli("bench --floor 1000,2500 --result-file " + file);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  j = read_json(file);
  CHECK(j["transactions"] == 1000);
  CHECK(j["hops"] == 2500);
  CHECK(j["hops_per_transaction"] == 2.5);
  CHECK(j["simulated_ns"] == 999 * 16 + 3 * 20);
  CHECK(j["peak_in_flight"] == 4);  // one sent every 16 ns lives 50 to 60 ns
}

TEST_CASE("bench: a floor holds as many transactions in flight as asked for",
          "[cli][bench][floor]") {
  // One sent every 16 ns lives in_flight x 16 ns (3 hops of a third of that): the 1,000 are
  // through in 999 x 16 ns and one lifetime.
  const std::string file = in_build("bench_floor_in_flight.json");
  for (const uint64_t in_flight : {100, 1000}) {
    auto r =
        run_cli("bench --floor 1000,3000," + std::to_string(in_flight) + " --result-file " + file);
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    json j = read_json(file);
    CHECK(j["transactions"] == 1000);
    CHECK(j["hops"] == 3000);
    CHECK(j["peak_in_flight"] == in_flight);
    CHECK(j["simulated_ns"] == 999 * 16 + in_flight * 16);
  }
}

TEST_CASE("bench: scaling sizes above the case's transfer run as repetitions of it",
          "[cli][bench]") {
  // write_1g's 1 GiB times 1/1024: repetitions of 1 MiB.
  std::string out;
  json j = bench_json("--scale-sizes 256KiB,1MiB,3MiB --size-factor 0.0009765625",
                      "bench_scale.json", &out);
  CHECK(j["cases"].empty());  // the scaling study alone
  CHECK(j["scale"]["case"] == "write_1g");
  CHECK(j["scale"]["fidelity"] == "burst");
  CHECK(j["scale"]["chunk_bytes"] == 1 << 20);
  const json& p = j["scale"]["points"];
  REQUIRE(p.size() == 3);
  CHECK(p[0]["size"] == 256 * 1024);
  CHECK(p[0]["count"] == 1);
  CHECK(p[2]["size"] == 1 << 20);
  CHECK(p[2]["count"] == 3);
  for (const auto& point : p) CHECK(point["run"]["bytes"] == point["total_bytes"]);
  CHECK(out.find("Scaling: write_1g at burst fidelity") != std::string::npos);
}

TEST_CASE("bench: --pins runs every kind of pin cycle, counted and checkpointed",
          "[cli][bench][pins]") {
  std::string out;
  json j = bench_json("--pins 2500", "bench_pins.json", &out);
  CHECK(j["cases"].empty());  // the pin cycles alone
  CHECK(j["pins"]["cycles"] == 2500);
  const json& runs = j["pins"]["runs"];
  std::vector<std::string> kinds;
  for (const auto& r : runs) kinds.push_back(r["kind"]);
  CHECK(kinds == std::vector<std::string>{"get_put", "alloc_free", "revoke", "kmd", "regcache"});
  for (const auto& r : runs) {
    INFO(r["kind"]);
    CHECK(r["cycles"] == 2500);
    const json& points = r["checkpoints"];
    REQUIRE(points.size() == 2);  // after 1,000 cycles and after all
    CHECK(points[0]["cycles"] == 1000);
    CHECK(points[1]["cycles"] == 2500);
    for (const auto& p : points) {
      CHECK(p["ns_per_cycle"].get<double>() > 0);
      CHECK(p["cpu_ns_per_cycle"].get<double>() >= 0);
      CHECK(p["rss_kib"].get<uint64_t>() > 0);
      CHECK(p["live_pins"] == 0);                    // between cycles nothing is pinned ...
      CHECK(p["kmd_regions"].get<uint64_t>() <= 1);  // ... nor piles up
      CHECK(p["events_kept"].get<uint64_t>() <= 1000);
      CHECK(p["driver_contexts"] == 1);
    }
    CHECK(points[1]["wall_seconds"].get<double>() >= points[0]["wall_seconds"].get<double>());
    // Every cycle pinned once, and released or (revoke, regcache) revoked once.
    const json& d = r["driver"];
    CHECK(d["pins"] == 2500);
    const bool revoked = r["kind"] == "revoke" || r["kind"] == "regcache";
    CHECK(d["unpins"] == (revoked ? 0 : 2500));
    CHECK(d["callbacks"] == (revoked ? 2500 : 0));
    CHECK(d["refused"] == 0);
    // The callbacks' events beyond the first 1,000 are counted, not kept.
    CHECK(d["events_dropped"] == (revoked ? 1500 : 0));
  }
  CHECK(out.find("Pin/unpin cycles") != std::string::npos);

  j = bench_json("--pins 10 --pin-cycles kmd", "bench_pins_kmd.json");
  REQUIRE(j["pins"]["runs"].size() == 1);
  CHECK(j["pins"]["runs"][0]["kind"] == "kmd");
  CHECK(j["pins"]["runs"][0]["checkpoints"].size() == 1);  // fewer than 1,000: at the end only
  CHECK(j["pins"]["runs"][0]["driver"]["pins"] == 10);
}

TEST_CASE("bench: bad options exit 2 and say what is wrong", "[cli][bench][bad]") {
  struct bad {
    std::string args, words;
  };
  for (const auto& b : {
           bad{"--fidelity fast", "--fidelity"},
           bad{"--cases write_1g,nope", "no case 'nope'"},
           bad{"--cases-dir /nonexistent", "no case 'write_1g'"},
           bad{"--scale-sizes 1GiB,apple", "'apple' is not a size"},
           bad{"--scale-sizes 1536MiB", "not a multiple"},
           bad{"--size-factor 0", "--size-factor"},
           bad{"--repeat 0", "--repeat"},
           bad{"--cpu 100000", "--cpu"},
           bad{"--floor 1000 --result-file x.json", "expected TRANSACTIONS,HOPS"},
           bad{"--pins 10 --pin-cycles get_put,nope", "no pin cycle 'nope'"},
           bad{"--pin-cycles kmd", "needs --pins"},
       }) {
    auto r = run_cli("bench " + b.args);
    INFO("bench " << b.args << "\nstderr: " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(b.words) != std::string::npos);
  }
}
