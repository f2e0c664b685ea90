// A scenario's `matrix`: one transfer per ordered pair of its devices, row by row, named
// "src->dst", after the listed transfers; bad matrices are named at file:line:col with the key.
#include <catch2/catch.hpp>

#include "sim/config/error.h"
#include "sim/core/scenario.h"

using namespace p2psim;

namespace {

std::string data(const std::string& path) {
  return std::string(P2PSIM_SOURCE_DIR) + "/" + path;
}

std::string error_of(const std::string& path) {
  try {
    core::load_scenario(data(path), {});
  } catch (const config::error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("matrix: every ordered pair once, row by row, diagonal left out", "[scenario][matrix]") {
  core::transfer_matrix m;
  m.devices = {"gpu0", "gpu1", "nic0"};
  m.write = false;
  m.size = 4096;
  m.count = 2;
  auto t = core::expand_matrix(m);
  REQUIRE(t.size() == 6);
  std::vector<std::string> names;
  for (const auto& x : t) names.push_back(x.name);
  CHECK(names == std::vector<std::string>{"gpu0->gpu1", "gpu0->nic0", "gpu1->gpu0", "gpu1->nic0",
                                          "nic0->gpu0", "nic0->gpu1"});
  for (const auto& x : t) {
    CHECK(x.name == x.initiator + "->" + x.target);
    CHECK_FALSE(x.write);
    CHECK(x.size == 4096);
    CHECK(x.count == 2);
    CHECK_FALSE(x.with_previous);  // each pair alone
    CHECK(x.from_matrix);
  }
}

TEST_CASE("matrix: a scenario's matrix follows its listed transfers", "[scenario][matrix]") {
  core::scenario sc = core::load_scenario(data("tests/data/scenarios/matrix_small.yaml"), {});
  REQUIRE(sc.matrix);
  CHECK(sc.matrix->devices == std::vector<std::string>{"gpu0", "nic0", "gpu2", "gpu4"});
  CHECK(sc.matrix->size == 256 * 1024);
  REQUIRE(sc.transfers.size() == 1 + 12);
  CHECK(sc.transfers[0].name == "before");
  CHECK_FALSE(sc.transfers[0].from_matrix);
  CHECK(sc.transfers[1].name == "gpu0->nic0");
  CHECK(sc.transfers[12].name == "gpu4->gpu2");
  CHECK(sc.transfers[12].from_matrix);
}

TEST_CASE("matrix: --set reaches the matrix's keys", "[scenario][matrix]") {
  core::scenario sc = core::load_scenario(data("tests/data/scenarios/matrix_small.yaml"),
                                          {config::parse_override("matrix.size=4KiB"),
                                           config::parse_override("matrix.devices=[gpu1, gpu3]"),
                                           config::parse_override("matrix.op=read")});
  REQUIRE(sc.transfers.size() == 1 + 2);
  CHECK(sc.transfers[1].name == "gpu1->gpu3");
  CHECK(sc.transfers[2].size == 4096);
  CHECK_FALSE(sc.transfers[2].write);
}

TEST_CASE("matrix: bad matrices name file:line:col and the key", "[scenario][matrix]") {
  CHECK_THAT(
      error_of("tests/corpus/bad/matrix_unknown_key.yaml"),
      Catch::Contains("matrix_unknown_key.yaml:4:50") && Catch::Contains("unknown key 'sise'"));
  CHECK_THAT(error_of("tests/corpus/bad/matrix_one_device.yaml"),
             Catch::Contains("matrix_one_device.yaml:4:19") && Catch::Contains("devices") &&
                 Catch::Contains("at least two devices"));
  CHECK_THAT(error_of("tests/corpus/bad/matrix_duplicate_device.yaml"),
             Catch::Contains("matrix_duplicate_device.yaml:4:") &&
                 Catch::Contains("'gpu0' is listed twice"));
  CHECK_THAT(error_of("tests/corpus/bad/matrix_op.yaml"), Catch::Contains("matrix_op.yaml:4:37") &&
                                                              Catch::Contains("op") &&
                                                              Catch::Contains("expected one of"));
}

TEST_CASE("matrix: a matrix pair may not reuse a listed transfer's name", "[scenario][matrix]") {
  auto sets = {config::parse_override("transfers.before.name=gpu0->nic0")};
  CHECK_THROWS_WITH(
      core::load_scenario(data("tests/data/scenarios/matrix_small.yaml"), sets),
      Catch::Contains("devices") && Catch::Contains("'gpu0->nic0' has the name of a listed one"));
}
