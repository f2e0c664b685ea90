// The soak's summary of burst against TLP fidelity: which bin a transfer falls in, which
// tally it counts in, and which warned cases count as false alarms.
#include <catch2/catch.hpp>

#include "tests/generated/burst_accuracy.h"

using p2psim::oracle::burst_accuracy;
using p2psim::oracle::factor_off;

TEST_CASE("oracle: a transfer is off by the larger of the two ratios", "[oracle]") {
  CHECK(factor_off(10, 10) == 1);
  CHECK(factor_off(20, 10) == 2);  // burst twice as fast
  CHECK(factor_off(5, 10) == 2);   // or half as fast: as far off
  CHECK(factor_off(10.1, 10) == Approx(1.01));
  CHECK(factor_off(0, 10) == HUGE_VAL);  // nothing moved at one fidelity
  CHECK(burst_accuracy::bin_of(1.0) == 0);
  CHECK(burst_accuracy::bin_of(1.01) == 0);  // exactly 1% is within 1%, as the check's rule
  CHECK(burst_accuracy::bin_of(1.0101) == 1);
  CHECK(burst_accuracy::bin_of(1.3) == 3);
  CHECK(burst_accuracy::bin_of(45.0) == 4);
}

TEST_CASE("oracle: the summary counts transfers by warning, and warned cases within 1%",
          "[oracle]") {
  burst_accuracy a;
  // A case without warnings: one transfer exact, one 2% slow.
  a.add_case({{"gen-1 t0", 10, 10, false}, {"gen-1 t1", 10, 9.8, false}}, false);
  // A warned case whose transfers all agree: a false alarm.
  a.add_case({{"gen-2 t0", 5, 5.01, true}}, true);
  // A warned case 46 times too fast at burst fidelity.
  a.add_case({{"gen-3 t3", 0.8234, 37.87, true}, {"gen-3 t0", 1, 1, false}}, true);
  CHECK(a.cases() == 3);
  CHECK(a.warned_cases() == 2);
  CHECK(a.warned_cases_within() == 1);
  CHECK(a.unwarned().transfers == 3);
  CHECK(a.unwarned().by_bin[0] == 2);
  CHECK(a.unwarned().by_bin[1] == 1);
  CHECK(a.unwarned().slow == 1);
  CHECK(a.unwarned().worst_at == "gen-1 t1");
  CHECK(a.report().find("worst -2.00% (gen-1 t1)") != std::string::npos);
  CHECK(a.warned().transfers == 2);
  CHECK(a.warned().by_bin[4] == 1);
  CHECK(a.warned().slow == 0);
  CHECK(a.warned().worst == Approx(37.87 / 0.8234));

  a.add_case({{"gen-4 t0", 1, 3, false}}, false);
  CHECK(a.cases() == 4);
  CHECK(a.unwarned().worst_at == "gen-4 t0");
  const std::string r = a.report();
  CHECK(r.find("over 4 cases") != std::string::npos);
  CHECK(r.find("worst 3.0x faster (gen-4 t0)") != std::string::npos);
  CHECK(r.find("worst 46.0x faster (gen-3 t3)") != std::string::npos);
  CHECK(r.find("cases with a burst warning: 2 of 4; of those, 1 had every transfer within 1%") !=
        std::string::npos);
}
