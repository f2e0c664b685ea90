// BAR1 sizing's plain logic (sim/core/bar1_sizing): candidate sizes, --sizes, the figures of
// a run, the recommendation, the table and the JSON.
#include <catch2/catch.hpp>
#include <sstream>

#include "sim/config/error.h"
#include "sim/core/bar1_sizing.h"

using namespace p2psim::core::bar1_sizing;
using nlohmann::json;

namespace {

constexpr uint64_t MiB = 1ull << 20, GiB = 1ull << 30;

size_result run(uint64_t bar1, uint64_t peak, uint64_t enomem, bool failed = false) {
  size_result s;
  s.bar1_bytes = bar1;
  s.reserved_bytes = 32 * MiB;
  s.peak_used_bytes = peak;
  s.get_pages_enomem = enomem;
  if (failed) s.errors.push_back("step 3 (app dma) returned -ENOMEM, expected ok");
  s.hits = 3;
  s.misses = 1;
  s.peak_requested_bytes = 1'000'000;
  s.peak_pinned_bytes = 16 * 65536;
  s.peak_mapped_bytes = 15 * 65536;
  return s;
}

report sample_report(std::vector<size_result> sizes) {
  report r;
  r.scenario = "sample";
  r.topology = "switch_only";
  r.gpu = "gpu0";
  r.topology_bar1_bytes = 32 * GiB;
  r.reserved_bytes = 32 * MiB;
  r.sizes = std::move(sizes);
  return r;
}

}  // namespace

TEST_CASE("default BAR1 candidates are the powers of two from 256 MiB up to the GPU's BAR1",
          "[bar1_sizing]") {
  auto sizes = default_candidates(32 * GiB, 32 * MiB);
  REQUIRE(sizes.size() == 8);
  CHECK(sizes.front() == 256 * MiB);
  CHECK(sizes[1] == 512 * MiB);
  CHECK(sizes.back() == 32 * GiB);
  for (size_t i = 1; i < sizes.size(); ++i) CHECK(sizes[i] == 2 * sizes[i - 1]);
}

TEST_CASE("a GPU with a 256 MiB BAR1 or less is tried at its own size only", "[bar1_sizing]") {
  CHECK(default_candidates(256 * MiB, 32 * MiB) == std::vector<uint64_t>{256 * MiB});
  CHECK(default_candidates(128 * MiB, 32 * MiB) == std::vector<uint64_t>{128 * MiB});
}

TEST_CASE("default candidates skip sizes the reserved region fills", "[bar1_sizing]") {
  CHECK(default_candidates(2 * GiB, 512 * MiB) == std::vector<uint64_t>{1 * GiB, 2 * GiB});
}

TEST_CASE("a list of sizes takes units and comes back sorted without duplicates", "[bar1_sizing]") {
  CHECK(parse_candidates("16GiB,256MiB,1GiB,256MiB", 32 * MiB) ==
        std::vector<uint64_t>{256 * MiB, 1 * GiB, 16 * GiB});
  CHECK(parse_candidates("268435456", 32 * MiB) == std::vector<uint64_t>{256 * MiB});
}

TEST_CASE("a list of sizes rejects what cannot be a BAR1 size", "[bar1_sizing]") {
  auto message = [](const std::string& list) {
    try {
      parse_candidates(list, 32 * MiB);
    } catch (const p2psim::config::error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(message("300MiB"), Catch::Contains("power of two"));
  CHECK_THAT(message("32KiB"), Catch::Contains("at least 64KiB"));
  CHECK_THAT(message("256MiB,lots"), Catch::Contains("'lots'"));
  CHECK_THAT(message("256MiB,,1GiB"), Catch::Contains("an empty size"));
  CHECK_THAT(message("32MiB"), Catch::Contains("reserves"));
  CHECK_THAT(message("300MiB"), Catch::StartsWith("--sizes 300MiB: error:"));
}

TEST_CASE("a size works only with no pin failure and nothing else wrong", "[bar1_sizing]") {
  CHECK(run(1 * GiB, 500 * MiB, 0).works());
  CHECK(run(1 * GiB, 500 * MiB, 0).verdict() == "ok");
  CHECK_FALSE(run(512 * MiB, 480 * MiB, 2).works());  // the caches evicted and retried
  CHECK(run(512 * MiB, 480 * MiB, 2).verdict() == "ENOMEM, recovered");
  CHECK(run(256 * MiB, 224 * MiB, 2, true).verdict() == "FAILED");
  CHECK(run(4 * GiB, 500 * MiB, 0, true).verdict() == "FAILED");  // not BAR1's fault, still no
}

TEST_CASE("the recommendation is the smallest size that works", "[bar1_sizing]") {
  std::vector<size_result> sizes = {run(256 * MiB, 224 * MiB, 3, true),
                                    run(512 * MiB, 480 * MiB, 1), run(1 * GiB, 518 * MiB, 0),
                                    run(2 * GiB, 518 * MiB, 0)};
  CHECK(recommend(sizes) == 2u);
  sizes.resize(2);
  CHECK_FALSE(recommend(sizes).has_value());
}

TEST_CASE("peak use is a share of the whole aperture and hit rate of all lookups",
          "[bar1_sizing]") {
  auto s = run(1 * GiB, 512 * MiB, 0);
  CHECK(s.peak_used_percent() == Approx(50.0));
  CHECK(s.usable_bytes() == 992 * MiB);
  CHECK(*s.hit_rate() == Approx(0.75));
  s.hits = s.misses = 0;
  CHECK_FALSE(s.hit_rate().has_value());
}

TEST_CASE("the figures of a run are read for the GPU being sized", "[bar1_sizing]") {
  json program = {{"steps", {{{"ok", true}}, {{"ok", false}}, {{"ok", true}}}},
                  {"driver", {{"pinning_ns", 123456.0}}},
                  {"regcache", {{"hits", 7}, {"misses", 3}, {"evictions", 2}}},
                  {"bar1",
                   {{{"gpu", "gpu1"},
                     {"reserved_bytes", 1},
                     {"peak_used_bytes", 1},
                     {"get_pages_enomem", 9},
                     {"peak_requested_bytes", 1},
                     {"peak_pinned_bytes", 1},
                     {"peak_mapped_bytes", 1}},
                    {{"gpu", "gpu0"},
                     {"reserved_bytes", 32 * MiB},
                     {"peak_used_bytes", 100 * MiB},
                     {"get_pages_enomem", 1},
                     {"peak_requested_bytes", 60'000'000},
                     {"peak_pinned_bytes", 916 * 65536},
                     {"peak_mapped_bytes", 915 * 65536}}}}};
  auto s = figures_of(program, {"an error"}, "gpu0", 256 * MiB);
  CHECK(s.bar1_bytes == 256 * MiB);
  CHECK(s.reserved_bytes == 32 * MiB);
  CHECK(s.peak_used_bytes == 100 * MiB);
  CHECK(s.get_pages_enomem == 1);
  CHECK(s.failed_steps == 1);
  CHECK(s.hits == 7);
  CHECK(s.misses == 3);
  CHECK(s.evictions == 2);
  CHECK(s.pinning_ns == Approx(123456.0));
  CHECK(s.peak_pinned_bytes - s.peak_mapped_bytes == 65536);
  CHECK(s.errors.size() == 1);
}

TEST_CASE("the table shows every size and recommends the smallest that works", "[bar1_sizing]") {
  std::ostringstream os;
  print_report(os, sample_report({run(512 * MiB, 480 * MiB, 1), run(1 * GiB, 518 * MiB, 0)}));
  const std::string text = os.str();
  INFO(text);
  CHECK_THAT(text, Catch::Contains("BAR1 Size"));
  CHECK_THAT(text, Catch::Contains("ENOMEM, recovered"));
  CHECK_THAT(text, Catch::Contains("75.0%"));  // hit rate
  CHECK_THAT(text, Catch::Contains("Recommended BAR1 size for gpu0: 1024 MiB"));
  // Rounding and sharing at the recommended size: 1,000,000 B asked for, 16 pages pinned,
  // 15 mapped.
  CHECK_THAT(text, Catch::Contains("1,000,000 B"));
  CHECK_THAT(text, Catch::Contains("+48,576 B of rounding"));
  CHECK_THAT(text, Catch::Contains("-65,536 B: 1 page(s) shared"));
}

TEST_CASE("with no size that works the report says why at the largest", "[bar1_sizing]") {
  std::ostringstream os;
  print_report(os, sample_report({run(256 * MiB, 224 * MiB, 4, true)}));
  CHECK_THAT(os.str(), Catch::Contains("No BAR1 size tried runs this workload"));
  CHECK_THAT(os.str(), Catch::Contains("-ENOMEM 4 time(s)"));
}

TEST_CASE("the JSON has each size's figures and the recommendation", "[bar1_sizing]") {
  auto j = to_json(sample_report({run(512 * MiB, 480 * MiB, 1), run(1 * GiB, 518 * MiB, 0)}));
  CHECK(j["gpu"] == "gpu0");
  CHECK(j["recommended_bar1_bytes"] == 1 * GiB);
  REQUIRE(j["sizes"].size() == 2);
  CHECK(j["sizes"][0]["works"] == false);
  CHECK(j["sizes"][0]["get_pages_enomem"] == 1);
  CHECK(j["sizes"][1]["rounding_bytes"] == 16 * 65536 - 1'000'000);
  CHECK(j["sizes"][1]["sharing_saved_bytes"] == 65536);
  CHECK(j["sizes"][1]["hit_rate"].get<double>() == Approx(0.75));
  auto none = to_json(sample_report({run(256 * MiB, 224 * MiB, 4, true)}));
  CHECK(none["recommended_bar1_bytes"].is_null());
}

TEST_CASE("the gnuplot script draws one point per size into the SVG", "[bar1_sizing]") {
  auto script = gnuplot_script(
      sample_report({run(512 * MiB, 480 * MiB, 1), run(1 * GiB, 518 * MiB, 0)}), "out.svg");
  CHECK_THAT(script, Catch::Contains("set terminal svg"));
  CHECK_THAT(script, Catch::Contains("set output 'out.svg'"));
  CHECK_THAT(script, Catch::Contains("512 480 480 1\n"));
  CHECK_THAT(script, Catch::Contains("1024 518 992 0\n"));
}
