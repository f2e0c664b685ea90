// No run may hang: a model that loops in zero time is stopped by the watchdog, which names
// the module that kept running; a deadlock (nothing left to happen) names what is blocked.
#include <catch2/catch.hpp>

#include "models/transport/activity.h"
#include "tests/models/harness.h"

namespace {
// A broken model: from 1 us on, it wakes itself again and again without time passing, as a
// buggy process that re-notifies itself with no delay would.
class zero_time_loop : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(zero_time_loop);
  explicit zero_time_loop(sc_core::sc_module_name n) : sc_module(n) {
    SC_METHOD(spin);
    sensitive << m_again;
    dont_initialize();
    m_again.notify(1, sc_core::SC_US);
  }

 private:
  void spin() {
    p2psim::transport::note_activity(this);
    m_again.notify(sc_core::SC_ZERO_TIME);
  }
  sc_core::sc_event m_again;
};
}  // namespace

TEST_CASE("the watchdog ends a run whose simulated time stops advancing and names the module",
          "[watchdog]") {
  using namespace p2psim;
  core::scenario sc = core::load_scenario(test::data("scenarios/faults/link_down.yaml"),
                                          {config::parse_override("watchdog=1s")});
  topo::load_options opt;
  opt.platform_dirs = {test::data("topologies/platforms")};
  topo::topology t = topo::load_topology(sc.topologies.at(0), opt);
  topo::address_map m = topo::enumerate(t);
  zero_time_loop broken("broken_model");
  CHECK_THROWS_WITH(core::run_topology(sc, t, m),
                    Catch::Contains("stopped by the watchdog") &&
                        Catch::Contains("stopped advancing at 1.000 us") &&
                        Catch::Contains("broken_model"));
}
