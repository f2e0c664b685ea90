// ACK and UpdateFC DLLPs are charged to the direction whose TLPs they answer, at the rate its
// receiver sends them (docs/architecture.md, "Timing model and why"): a root port's rate from
// its platform preset (`root_complex.ack_limit`, `.fc_limit`), a device's from its own settings,
// the spec's tables where neither says, and a link's `ack_limit` / `fc_limit` over both ends.
// The oracle is the link-layer share of pcie::tlp_layer_gbs (docs/design.md's formula).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "models/pcie/link_timing.h"
#include "tests/cli/cli_harness.h"

using nlohmann::json;
using p2psim::test::in_build;
using p2psim::test::read_json;
using p2psim::test::run_cli;

namespace {

const char* scenario = "tests/data/scenarios/dllp_rates.yaml";

json run(const std::string& sets, const std::string& tag) {
  const std::string file = in_build("dllp_rates_" + tag + ".json");
  auto r = run_cli("run " + std::string(scenario) + sets + " --json " + file);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  return read_json(file);
}

double gbps(const json& j, const std::string& transfer) {
  for (const json& b : j["bandwidth"])
    if (b["transfer"] == transfer) return b["gbps"].get<double>();
  FAIL("no transfer " << transfer);
  return 0;
}

// The share of a Gen5 x16 direction's time its TLPs get with an ACK and an UpdateFC every
// `limit` bytes of it: the receiver's timers run in symbol times, SKIPs included, so the DLLPs
// and the SKIPs each take their share of the raw time (docs/design.md, "PCIe timing").
double tlp_share(uint32_t limit) {
  return 1.0 - p2psim::pcie::skip_fraction - 16.0 / limit;
}

}  // namespace

TEST_CASE("DLLP rates: each direction takes its receiver's, the spec's where none is set",
          "[cli][link]") {
  const json preset = run("", "preset");
  const json& link = preset["runs"][0]["stats"]["links"]["gpu0"];
  CHECK(link["upstream"]["ack_limit_bytes"] == 400);  // the root port receives it
  CHECK(link["upstream"]["fc_limit_bytes"] == 400);
  CHECK(link["downstream"]["ack_limit_bytes"] == 312);  // the H200 receives it
  CHECK(link["downstream"]["fc_limit_bytes"] == 312);
  const uint32_t spec = p2psim::pcie::spec_ack_limit(5, 16, 256);
  REQUIRE(spec == p2psim::pcie::spec_fc_limit(5, 16, 256));
  const json tables =
      run(" --set socket.cpu0.root_complex.ack_limit=0 --set socket.cpu0.root_complex.fc_limit=0"
          " --set device.gpu0.ack_limit=0 --set device.gpu0.fc_limit=0",
          "tables");
  const json& plain = tables["runs"][0]["stats"]["links"]["gpu0"];
  CHECK(plain["upstream"]["ack_limit_bytes"] == spec);
  CHECK(plain["downstream"]["fc_limit_bytes"] == spec);
  // The writes go up, their data's completions of the reads come down: each moves as much
  // faster as its direction's TLPs get more of the link. 64 MiB takes over a millisecond; the
  // first TLP's way there and back, the only time not in that ratio, is under a microsecond.
  CHECK(gbps(preset, "d2h") / gbps(tables, "d2h") ==
        Approx(tlp_share(400) / tlp_share(spec)).epsilon(1e-3));
  CHECK(gbps(preset, "h2d") / gbps(tables, "h2d") ==
        Approx(tlp_share(312) / tlp_share(spec)).epsilon(1e-3));
}

TEST_CASE("DLLP rates: a link's own limits go for both of its ends", "[cli][link]") {
  const json j = run(" --set link.gpu0.ack_limit=1000 --set link.gpu0.fc_limit=2000", "link");
  const json& link = j["runs"][0]["stats"]["links"]["gpu0"];
  CHECK(link["upstream"]["ack_limit_bytes"] == 1000);
  CHECK(link["downstream"]["ack_limit_bytes"] == 1000);
  CHECK(link["upstream"]["fc_limit_bytes"] == 2000);
  CHECK(link["downstream"]["fc_limit_bytes"] == 2000);
}
