// p2psim bench's plain logic: figures read from a run's JSON, the floor's size, speedups and
// shares of the floor, the split of scaling sizes into repetitions, and bad option values.
#include <catch2/catch.hpp>

#include "sim/bench/bench.h"
#include "sim/config/error.h"

using namespace p2psim::bench;
using nlohmann::json;

namespace {

constexpr uint64_t MiB = 1ull << 20, GiB = 1ull << 30;

json run_json(double wall, double data_wall) {
  json sim = {{"simulated_ns", 1000}, {"tlps", 400}, {"hops", 1300}, {"fidelity", "tlp"}};
  json host = {{"wall_seconds", wall}, {"data_wall_seconds", data_wall}, {"peak_rss_kib", 2048}};
  json sim_a = sim, sim_b = sim;
  sim_a["peak_in_flight"] = 9;
  sim_b["peak_in_flight"] = 31;
  return {{"bandwidth",
           {{{"bytes", 3000}, {"seconds", 1e-6}, {"gbps", 3.0}},
            {{"bytes", 1000}, {"seconds", 1e-6}, {"gbps", 1.0}}}},
          {"runs", {{{"sim", sim_a}, {"host", host}}, {{"sim", sim_b}, {"host", host}}}}};
}

}  // namespace

TEST_CASE("bench: a run's figures are its topologies' sums, less the data wall", "[bench]") {
  run_figures f = figures_of_run(run_json(2.5, 0.5));
  CHECK(f.tlps == 800);
  CHECK(f.hops == 2600);
  CHECK(f.simulated_ns == 2000);
  CHECK(f.wall_seconds == Approx(4.0));
  CHECK(f.data_wall_seconds == Approx(1.0));
  CHECK(f.peak_rss_kib == 2048);
  CHECK(f.peak_in_flight == 31);  // the fuller topology's: they run one after the other
  CHECK(to_json(f)["peak_in_flight"] == 31);
  CHECK(f.tlps_per_second() == Approx(200));
  CHECK(f.hops_per_second() == Approx(650));
  CHECK(f.bytes == 4000);
  CHECK(f.gbps == Approx(2.0));  // all bytes over all the transfers' time
}

TEST_CASE("bench: the floor's size is the case's TLPs and TLP-hops", "[bench]") {
  using size = std::pair<uint64_t, uint64_t>;
  case_result c;
  CHECK(c.floor_size() == size{0, 0});
  c.burst = figures_of_run(run_json(1, 0));
  CHECK(c.floor_size() == size{800, 2600});  // 3.25 hops per TLP, as the case took them
  c.tlp = c.burst;
  c.tlp->tlps = 100;
  c.tlp->hops = 50;
  CHECK(c.floor_size() == size{100, 100});  // the TLP run's; at least one hop each
  c.tlp->hops = 10000;
  CHECK(c.floor_size() == size{100, 6400});  // at most 64
}

TEST_CASE("bench: speedup, bandwidth difference and share of the floor", "[bench]") {
  case_result c;
  c.tlp = figures_of_run(run_json(10, 0));
  CHECK(c.burst_speedup() == 0);
  c.burst = figures_of_run(run_json(1, 0));
  c.burst->gbps = 2.1;
  CHECK(c.burst_speedup() == Approx(10));
  CHECK(c.gbps_difference_percent() == Approx(5));
  CHECK(c.percent_of_floor(*c.tlp) == 0);
  c.floor = floor_figures{800, 2600, 0, 1.3, 0, 7};
  CHECK(c.percent_of_floor(*c.tlp) == Approx(130.0 / 2000 * 100));
  floor_figures back = floor_from_json(to_json(*c.floor));
  CHECK(back.transactions == 800);
  CHECK(back.hops == 2600);
  CHECK(back.peak_in_flight == 7);
  CHECK(back.hops_per_transaction() == 3.25);
}

TEST_CASE("bench: scaling sizes above the case's transfer become repetitions", "[bench]") {
  CHECK(split_total(256 * MiB, GiB, "k").size == 256 * MiB);
  CHECK(split_total(256 * MiB, GiB, "k").count == 1);
  CHECK(split_total(GiB, GiB, "k").count == 1);
  CHECK(split_total(4 * GiB, GiB, "k").size == GiB);
  CHECK(split_total(4 * GiB, GiB, "k").count == 4);
  CHECK_THROWS_WITH(split_total(GiB + MiB, GiB, "--scale-sizes"),
                    Catch::Contains("--scale-sizes") && Catch::Contains("not a multiple"));
  CHECK(parse_sizes("256MiB,1GiB,4GiB", "k") == std::vector<uint64_t>{256 * MiB, GiB, 4 * GiB});
  for (const char* bad : {"", "1GiB,", "1 apple", "0", "1KB"})
    CHECK_THROWS_AS(parse_sizes(bad, "k"), p2psim::config::error);
}

TEST_CASE("bench: a size factor keeps whole 4 KiB pages", "[bench]") {
  CHECK(scale_size(GiB, 1) == GiB);
  CHECK(scale_size(GiB, 0.5) == GiB / 2);
  CHECK(scale_size(GiB, 0.001) == 262 * 4096);  // 1073741.8 B, to the nearest page
  CHECK(scale_size(8 * MiB, 1e-9) == 4096);
  CHECK(scale_size(100, 1) == 100);
}

TEST_CASE("bench: the floor's size option", "[bench]") {
  using size = p2psim::bench::floor_shape;
  CHECK(parse_floor_size("1000,3000") == size{1000, 3000, 0});
  CHECK(parse_floor_size("1000,2517") == size{1000, 2517, 0});
  CHECK(parse_floor_size("1000,64000") == size{1000, 64000, 0});
  CHECK(parse_floor_size("1000,3000,250") == size{1000, 3000, 250});
  CHECK(parse_floor_size("1000,3000,1000") == size{1000, 3000, 1000});
  for (const char* bad :
       {"", "1000", "0,3", "1000,0", "1000,999", "1000,64001", "-5,3", "5,-30", "1000,3,4", "a,b",
        "1000,3000,1001", "1000,3000,-1", "1000,3000,x", "1000,3000,", "1000,3000,4,5"})
    CHECK_THROWS_AS(parse_floor_size(bad), p2psim::config::error);
}

TEST_CASE("bench: pin cycles are timed at every power of ten from 1,000 and at the end",
          "[bench][pins]") {
  CHECK(pin_checkpoints(0).empty());
  CHECK(pin_checkpoints(10) == std::vector<uint64_t>{10});
  CHECK(pin_checkpoints(1000) == std::vector<uint64_t>{1000});
  CHECK(pin_checkpoints(2500) == std::vector<uint64_t>{1000, 2500});
  CHECK(pin_checkpoints(10'000'000) ==
        std::vector<uint64_t>{1000, 10'000, 100'000, 1'000'000, 10'000'000});
}

TEST_CASE("bench: pin cycle kinds are checked by name", "[bench][pins]") {
  CHECK(parse_pin_cycle_kinds("kmd,get_put", "--pin-cycles") ==
        std::vector<std::string>{"kmd", "get_put"});
  CHECK_THROWS_AS(parse_pin_cycle_kinds("kmd,", "--pin-cycles"), p2psim::config::error);
  CHECK_THROWS_AS(parse_pin_cycle_kinds("pin", "--pin-cycles"), p2psim::config::error);
}
