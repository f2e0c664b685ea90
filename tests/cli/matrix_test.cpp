// A scenario's `matrix` through `p2psim run`: the report adds p2pBandwidthLatencyTest's
// matrix with the devices in the listed order and the diagonal blank, whose cells are the
// JSON's bandwidths; a device the topology lacks is named at the matrix's line.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/cli/cli_harness.h"

using p2psim::test::run_cli;

namespace {

std::vector<std::string> lines_after(const std::string& text, const std::string& title, size_t n) {
  std::vector<std::string> out;
  std::istringstream in(text.substr(text.find(title)));
  std::string line;
  std::getline(in, line);
  while (out.size() < n && std::getline(in, line)) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("matrix: the report adds the device x device matrix of the pairs", "[cli][matrix]") {
  const std::string file = std::string(P2PSIM_BUILD_DIR) + "/matrix_small.json";
  auto r = run_cli("run tests/data/scenarios/matrix_small.yaml --json " + file);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const std::string title =
      "Unidirectional P2P write bandwidth matrix (GB/s), 256KiB per pair, initiator (row) -> "
      "target (column)";
  REQUIRE(r.out.find(title) != std::string::npos);
  // The usual device matrix is still there.
  CHECK(r.out.find("Unidirectional P2P write bandwidth (GB/s), initiator (row)") !=
        std::string::npos);
  std::ifstream f(file);
  nlohmann::json j = nlohmann::json::parse(f);
  REQUIRE(j["bandwidth"].size() == 1 + 12);
  std::map<std::string, double> gbps;
  for (const auto& b : j["bandwidth"]) gbps[b["transfer"]] = b["gbps"];
  const std::vector<std::string> devices = {"gpu0", "nic0", "gpu2", "gpu4"};
  auto rows = lines_after(r.out, title, 1 + devices.size());
  std::istringstream header(rows[0]);
  std::vector<std::string> columns;
  for (std::string w; header >> w;) columns.push_back(w);
  CHECK(columns == std::vector<std::string>{"D\\D", "gpu0", "nic0", "gpu2", "gpu4"});
  for (size_t i = 0; i < devices.size(); ++i) {
    std::istringstream row(rows[1 + i]);
    std::vector<std::string> cells;
    for (std::string w; row >> w;) cells.push_back(w);
    INFO(rows[1 + i]);
    REQUIRE(cells.size() == devices.size());  // the name and three pairs: the diagonal is blank
    CHECK(cells[0] == devices[i]);
    size_t k = 1;
    for (size_t col = 0; col < devices.size(); ++col) {
      if (col == i) continue;
      char want[32];
      std::snprintf(want, sizeof want, "%.2f", gbps.at(devices[i] + "->" + devices[col]));
      CHECK(cells[k++] == want);
    }
  }
  // Every path class of the server appears: PIX under a switch, PHB across root ports, SYS
  // across UPI, slowest last.
  CHECK(gbps.at("gpu0->nic0") > gbps.at("gpu0->gpu2"));
  CHECK(gbps.at("gpu0->gpu2") > gbps.at("gpu0->gpu4"));
}

TEST_CASE("matrix: a device the topology lacks is named at the matrix", "[cli][matrix][bad]") {
  auto r = run_cli("run tests/corpus/bad/matrix_unknown_device.yaml");
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("matrix_unknown_device.yaml:5:") != std::string::npos);
  CHECK(r.err.find("'nic9' is not a") != std::string::npos);
}

TEST_CASE("matrix: a bad matrix key exits 2 naming file:line:col", "[cli][matrix][bad]") {
  auto r = run_cli("run tests/corpus/bad/matrix_op.yaml");
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("matrix_op.yaml:4:37: error: op: expected one of") != std::string::npos);
}
