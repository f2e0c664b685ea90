// p2psim validate's plain logic: measured figures, errors against them, the shipped table and
// the summary's limits (docs/validation.md).
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "sim/config/error.h"
#include "sim/validate/measurement_table.h"
#include "sim/validate/validation_report.h"

using namespace p2psim::validate;

namespace {
const std::string k_table = P2PSIM_SOURCE_DIR "/scenarios/validation/measurements.yaml";

std::string load_error(const std::string& yaml) {
  const auto dir = std::filesystem::temp_directory_path() / "p2psim_validate_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "s.yaml") << "name: s\n";
  const auto path = dir / "table.yaml";
  std::ofstream(path) << yaml;
  try {
    load_table(path.string());
  } catch (const p2psim::config::error& e) {
    return e.what();
  }
  return "";
}

const char* k_row =
    "rows:\n"
    "  - id: a\n"
    "    class: cross-socket\n"
    "    machine: m\n"
    "    how: h\n"
    "    source: s\n"
    "    scenario: s.yaml\n"
    "    transfer: t\n"
    "    figure: bandwidth\n"
    "    measured: 5GB/s\n";
}  // namespace

TEST_CASE("A measured figure is a value, a range or an upper bound", "[validate]") {
  auto v = parse_measured("55.3GB/s", figure::bandwidth);
  CHECK(v.low == Approx(55.3));
  CHECK(v.high == Approx(55.3));
  auto r = parse_measured("653ns..666ns", figure::time);
  CHECK(r.low == Approx(653));
  CHECK(r.high == Approx(666));
  auto b = parse_measured("<0.3GB/s", figure::bandwidth);
  CHECK(b.low == 0);
  CHECK(b.high == Approx(0.3));
  CHECK_THROWS_AS(parse_measured("56GB/s..53GB/s", figure::bandwidth), std::invalid_argument);
  CHECK_THROWS_AS(parse_measured("560ns", figure::bandwidth), std::invalid_argument);
  CHECK_THROWS_AS(parse_measured("5GB/s", figure::time), std::invalid_argument);
  CHECK_THROWS_AS(parse_measured("<0GB/s", figure::bandwidth), std::invalid_argument);
}

TEST_CASE("The error is relative to the nearest end of the measured range", "[validate]") {
  const auto r = parse_measured("50GB/s..60GB/s", figure::bandwidth);
  CHECK(relative_error(r, 55) == 0);
  CHECK(relative_error(r, 66) == Approx(0.10));
  CHECK(relative_error(r, 45) == Approx(-0.10));
  CHECK(relative_error(parse_measured("<0.3GB/s", figure::bandwidth), 0.01) == 0);
}

TEST_CASE("The shipped table has at least 30 sourced rows whose scenarios exist", "[validate]") {
  const auto rows = load_table(k_table);
  CHECK(rows.size() >= 30);
  for (const auto& m : rows) {
    INFO(m.id);
    CHECK(!m.source.empty());
    CHECK(!m.machine.empty());
    CHECK(!m.how.empty());
    CHECK(std::filesystem::is_regular_file(m.scenario));
  }
}

TEST_CASE("A malformed table names the file, the line and the key", "[validate]") {
  CHECK(load_error(k_row).empty());
  CHECK_THAT(load_error(std::string(k_row) + "    colour: red\n"),
             Catch::Contains("table.yaml:11:5") && Catch::Contains("unknown key 'colour'"));
  std::string bad_unit = k_row;
  bad_unit.replace(bad_unit.find("5GB/s"), 5, "5ns");
  CHECK_THAT(load_error(bad_unit), Catch::Contains(":10:") && Catch::Contains("measured"));
  std::string no_scenario = k_row;
  no_scenario.replace(no_scenario.find("s.yaml"), 6, "x.yaml");
  CHECK_THAT(load_error(no_scenario), Catch::Contains("scenario") && Catch::Contains("x.yaml"));
  std::string bad_class = k_row;
  bad_class.replace(bad_class.find("cross-socket"), 12, "vibes");
  CHECK_THAT(load_error(bad_class), Catch::Contains("class"));
  std::string twice = std::string(k_row) + std::string(k_row).substr(6);
  CHECK_THAT(load_error(twice), Catch::Contains("'a' names another row"));
  std::string time_sum = k_row;
  time_sum.replace(time_sum.find("transfer: t"), 11, "transfer: t+u");
  time_sum.replace(time_sum.find("bandwidth"), 9, "time");
  time_sum.replace(time_sum.find("5GB/s"), 5, "5ns");
  CHECK_THAT(load_error(time_sum), Catch::Contains("only bandwidths add up"));
}

TEST_CASE("A validation passes on its median and its worst row, and a failed run fails it",
          "[validate]") {
  measurement a, b, c;
  a.cls = b.cls = c.cls = "cross-socket";
  c.calibrates = "x y";
  auto result = [](const measurement& m, double error) {
    row_result r;
    r.row = &m;
    r.simulated = 1;
    r.error = error;
    return r;
  };
  auto s = summarize({result(a, 0.01), result(b, -0.04), result(c, 0.02)});
  CHECK(s.all.median == Approx(0.02));
  CHECK(s.all.worst == Approx(0.04));
  CHECK(s.independent.rows == 2);
  CHECK(s.passed);
  CHECK_FALSE(summarize({result(a, 0.01), result(b, -0.16), result(c, 0.02)}).passed);
  CHECK_FALSE(summarize({result(a, 0.06), result(b, -0.06), result(c, 0.02)}).passed);
  row_result failed;
  failed.row = &b;
  auto f = summarize({result(a, 0.0), failed, result(c, 0.0)});
  CHECK_FALSE(f.passed);
  CHECK(std::isinf(f.all.worst));
}
