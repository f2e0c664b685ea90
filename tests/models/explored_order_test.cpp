// With a choice source installed, egress queues take the ordering table's Y/N cases either
// way (docs/design.md, "Ordering"). Whatever they choose, no rule that keeps data intact is broken:
// completions of one request stay in address order and every byte arrives.
#include <catch2/catch.hpp>

#include "models/pcie/order_policy.h"
#include "tests/models/harness.h"

TEST_CASE("explored orders keep every byte intact", "[ordering][explore]") {
  p2psim::pcie::seeded_choices choices(7);
  auto r = p2psim::test::run_scenario("tests/data/models/every_path.yaml", {}, {{}, &choices});
  INFO(choices.picks() << " Y/N decisions");
  CHECK(choices.picks() > 0);  // the fabric did meet Y/N choices
  for (const auto& b : r.bandwidth) {
    INFO(b.transfer);
    CHECK(b.mismatched_bytes == 0);
    CHECK(b.failed_bytes == 0);
  }
  CHECK(r.errors.empty());
}
