// The registration cache's effect (GPUDirect RDMA 13.3, 5.1 Lazy Unpinning, 5.2 Registration
// Cache): the same transfers with and without it; pinning time is in the result.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_harness.h"

namespace {
nlohmann::json program_of(const std::string& args, const std::string& name, std::string* out) {
  std::string file = std::string(P2PSIM_BUILD_DIR) + "/" + name + ".json";
  auto r = p2psim::test::run_cli("run scenarios/regcache.yaml " + args + " --json " + file);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  *out = r.out;
  std::ifstream f(file);
  return nlohmann::json::parse(f)["runs"][0]["program"];
}
}  // namespace

TEST_CASE("the registration cache saves the pinning time of repeated transfers",
          "[cli][regcache]") {
  std::string with_text, without_text;
  auto with = program_of("", "regcache_on", &with_text);
  auto without =
      program_of("--set peer_driver.regcache.enabled=false", "regcache_off", &without_text);
  double pin_with = with["driver"]["pinning_ns"], pin_without = without["driver"]["pinning_ns"];
  INFO("pinning with cache " << pin_with << " ns, without " << pin_without << " ns");
  CHECK(with["driver"]["pins"] == 2);
  CHECK(without["driver"]["pins"] == 24);
  CHECK(pin_without > 4 * pin_with);
  for (size_t i = 0; i < with["dma"].size(); ++i) {
    // Same bytes, both intact; the uncached run is slower because it pins every time.
    CHECK(with["dma"][i]["bytes"] == without["dma"][i]["bytes"]);
    CHECK(with["dma"][i]["mismatched_bytes"] == 0);
    CHECK(without["dma"][i]["mismatched_bytes"] == 0);
    CHECK(with["dma"][i]["gbps"].get<double>() > without["dma"][i]["gbps"].get<double>());
  }
  // The report shows it the way nvidia-smi and the cache counters read.
  CHECK(with_text.find("BAR1 Memory Usage") != std::string::npos);
  CHECK(with_text.find("registration cache: 22 hits, 2 misses") != std::string::npos);
  CHECK(without_text.find("pinning took") != std::string::npos);
}
