// p2psim params: the declared settings and statistics, and the docs tables made from them.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "cli_harness.h"

using Catch::Matchers::Contains;
using p2psim::test::read_text;
using p2psim::test::run_cli;

TEST_CASE("params: lists every setting and every statistic", "[cli][params]") {
  auto r = run_cli("params");
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("| `latency` | time | `110ns` |"));  // a switch's
  CHECK_THAT(r.out, Contains("| `root_complex.p2p.read.outstanding` | integer 0..65535 |"));
  CHECK_THAT(r.out, Contains("| `forwarded_tlps` | TLPs |"));
  CHECK_THAT(r.out, Contains("| `utilization_ratio` | ratio |"));
}

TEST_CASE("params: the tables in docs/ are the declarations", "[cli][params]") {
  // --update-docs on a copy of each page must change nothing.
  for (const char* page : {"docs/formats-topology.md", "docs/formats-scenario.md"}) {
    INFO(page << ": regenerate with p2psim params --update-docs " << page);
    const std::string original = read_text(std::string(P2PSIM_SOURCE_DIR) + "/" + page);
    const std::string copy = std::string(P2PSIM_BUILD_DIR) + "/params_test_" +
                             std::filesystem::path(page).filename().string();
    std::ofstream(copy, std::ios::binary) << original;
    auto r = run_cli("params --update-docs " + copy);
    CHECK(r.exit_code == 0);
    CHECK(read_text(copy) == original);
    std::filesystem::remove(copy);
  }
}

TEST_CASE("params: a page with a marker for no table is refused", "[cli][params]") {
  const std::string copy = std::string(P2PSIM_BUILD_DIR) + "/params_test_bad.md";
  std::ofstream(copy) << "text\n<!-- stats: nothing -->\n<!-- end stats -->\n";
  auto r = run_cli("params --update-docs " + copy);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("no stats table named 'nothing'"));
  std::filesystem::remove(copy);
}
