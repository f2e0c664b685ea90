// A fabric that cannot make progress is reported as such, never as partial results: here a
// receive buffer smaller than one TLP (which the topology checks reject, so the test builds
// it after loading) leaves the transfer waiting for credits forever.
#include <catch2/catch.hpp>

#include "tests/models/harness.h"

TEST_CASE("a run that stalls says where instead of reporting partial results", "[stall]") {
  using namespace p2psim;
  core::scenario sc = core::load_scenario(test::data("tests/data/scenarios/single_rc.yaml"), {});
  topo::load_options opt;
  opt.platform_dirs = {test::data("topologies/platforms")};
  topo::topology t = topo::load_topology(sc.topologies.at(0), opt);
  for (auto& l : t.links)
    if (l.down == "nic0") l.credits.pd = 8;  // 128 B of posted data: a 256 B write never fits
  topo::address_map m = topo::enumerate(t);
  CHECK_THROWS_WITH(core::run_topology(sc, t, m),
                    Catch::Contains("stalled") && Catch::Contains("transfer 'write'") &&
                        Catch::Contains("blocked:\n    link nic0 up: ") &&
                        Catch::Contains("needs 1 header and 16 data credits"));
}
