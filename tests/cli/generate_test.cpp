// p2psim generate: the files it writes, byte for byte the same for a seed, and they run.
#include <catch2/catch.hpp>

#include <filesystem>

#include "cli_harness.h"

using p2psim::test::read_text;
using p2psim::test::run_cli;

TEST_CASE("generate: a seed writes the same loadable machine and workload every time",
          "[cli][generate]") {
  const std::string a = std::string(P2PSIM_BUILD_DIR) + "/generate_a";
  const std::string b = std::string(P2PSIM_BUILD_DIR) + "/generate_b";
  std::filesystem::remove_all(a);
  std::filesystem::remove_all(b);
  auto r = run_cli("generate --seed 7 --count 3 -o " + a);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("gen-7:") != std::string::npos);
  CHECK(r.out.find("gen-9:") != std::string::npos);
  REQUIRE(run_cli("generate --seed 8 -o " + b).exit_code == 0);
  CHECK(read_text(a + "/gen-8.yaml") == read_text(b + "/gen-8.yaml"));
  CHECK(read_text(a + "/gen-8.topology.yaml") == read_text(b + "/gen-8.topology.yaml"));
  CHECK(read_text(a + "/gen-7.topology.yaml") != read_text(a + "/gen-8.topology.yaml"));
  for (const char* seed : {"7", "8", "9"}) {
    auto run = run_cli("run " + a + "/gen-" + seed + ".yaml --fidelity burst", 120);
    INFO(run.out << run.err);
    CHECK(run.exit_code == 0);
  }
}

TEST_CASE("generate: a folder it cannot write is an error naming it", "[cli][generate]") {
  auto r = run_cli("generate --seed 1 -o /proc/no_such_folder");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--output") != std::string::npos);
}
