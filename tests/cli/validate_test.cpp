// p2psim validate as a user runs it (docs/validation.md): every row of the shipped table runs
// and gives a figure, the errors and the verdict follow from the figures, and bad options and
// rows that cannot run are named.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
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
// The error against the nearest end of the measured range, recomputed from the JSON.
double error_of(const json& row) {
  const double sim = row["simulated"], low = row["measured"]["low"], high = row["measured"]["high"];
  if (sim > high) return (sim - high) / high;
  if (sim < low) return (sim - low) / low;
  return 0;
}
}  // namespace

// The acceptance limits of docs/validation.md: median error at most 5%, no row above 15%.
TEST_CASE("validate: every shipped row runs, the verdict follows from its figures, and it passes",
          "[cli][validate]") {
  const std::string file = in_build("validate.json");
  auto r = run_cli("validate --json " + file);
  INFO(r.out << r.err);
  REQUIRE((r.exit_code == 0 || r.exit_code == 1));
  const json j = read_json(file);
  REQUIRE(j["rows"].size() >= 30);
  std::vector<double> errors;
  for (const json& row : j["rows"]) {
    INFO(row["id"]);
    REQUIRE(row["simulated"].is_number());  // every scenario ran and has the row's transfer
    CHECK(row["error"].get<double>() == Approx(error_of(row)).margin(1e-12));
    CHECK(r.out.find(row["id"].get<std::string>()) != std::string::npos);
    errors.push_back(std::abs(error_of(row)));
  }
  std::sort(errors.begin(), errors.end());
  const size_t n = errors.size();
  const double median = n % 2 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2;
  CHECK(j["all"]["median_abs_error"].get<double>() == Approx(median));
  CHECK(j["all"]["worst_abs_error"].get<double>() == Approx(errors.back()));
  const bool passed = median <= 0.05 && errors.back() <= 0.15;
  CHECK(j["passed"] == passed);
  CHECK(r.exit_code == (passed ? 0 : 1));
  CHECK(passed);
  CHECK(j["classes"].size() >= 5);
}

TEST_CASE("validate: --rows runs the rows it names", "[cli][validate]") {
  const std::string file = in_build("validate_rows.json");
  auto r = run_cli("validate --rows snb_read_64b,snb_p2p_write --json " + file);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  const json j = read_json(file);
  REQUIRE(j["rows"].size() == 2);
  CHECK(j["rows"][0]["id"] == "snb_read_64b");
  CHECK(j["rows"][0]["unit"] == "ns");
  CHECK(j["rows"][1]["id"] == "snb_p2p_write");
}

TEST_CASE("validate: bad options and a row that cannot run", "[cli][validate]") {
  auto no_row = run_cli("validate --rows nope");
  CHECK(no_row.exit_code == 2);
  CHECK_THAT(no_row.err, Catch::Contains("--rows") && Catch::Contains("no row 'nope'"));
  auto no_table = run_cli("validate --table /nonexistent/table.yaml");
  CHECK(no_table.exit_code == 2);
  CHECK_THAT(no_table.err, Catch::Contains("/nonexistent/table.yaml"));
  auto no_dir = run_cli("validate --rows snb_read_64b --json /nonexistent/dir/v.json");
  CHECK(no_dir.exit_code == 2);
  CHECK_THAT(no_dir.err, Catch::Contains("--json"));

  // A row naming a transfer its scenario lacks fails the validation and says which.
  const fs::path dir = fs::path(P2PSIM_BUILD_DIR) / "validate_bad_row";
  fs::create_directories(dir);
  const std::string scenario =
      fs::path(P2PSIM_SOURCE_DIR "/scenarios/validation/host_dma_read_latency.yaml").string();
  std::ofstream(dir / "table.yaml") << "rows:\n"
                                       "  - id: lost\n"
                                       "    class: small-transfer latency\n"
                                       "    machine: m\n"
                                       "    how: h\n"
                                       "    source: s\n"
                                       "    scenario: "
                                    << scenario
                                    << "\n"
                                       "    transfer: no_such_transfer\n"
                                       "    figure: time\n"
                                       "    measured: 560ns\n";
  auto bad = run_cli("validate --table " + (dir / "table.yaml").string());
  INFO(bad.out << bad.err);
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.out,
             Catch::Contains("no transfer 'no_such_transfer'") && Catch::Contains("FAILED"));
}
