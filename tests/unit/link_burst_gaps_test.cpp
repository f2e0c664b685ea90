// Burst fidelity's share of the wire for what goes in a burst's gaps
// (models/link/burst_gaps.h; docs/architecture.md, "Burst fidelity", "Gaps").
#include <catch2/catch.hpp>

#include "models/link/burst_gaps.h"

using p2psim::link::burst_gaps;

TEST_CASE("burst gaps: a burst whose symbols fill its time leaves none", "[link][burst]") {
  // 4 TLPs of 100 ps back to back: the wire is busy from 0 to 400.
  const burst_gaps g = burst_gaps::of(0, 100, 400, 400, 4);
  CHECK(g.until_ps <= g.from_ps);
  CHECK(g.earliest(150) >= g.until_ps);  // nothing goes beside it
  // Nor does one that leaves less than 1% of its time idle, or a single TLP, whatever its
  // time on the wire.
  const burst_gaps dense = burst_gaps::of(0, 100, 1000, 995, 10);
  CHECK(dense.earliest(500) >= dense.until_ps);
  const burst_gaps one = burst_gaps::of(0, 100, 3100, 100, 1);
  CHECK(one.until_ps <= one.from_ps);
  CHECK(one.earliest(500) >= one.until_ps);
}

TEST_CASE("burst gaps: a trickling burst leaves its idle share of the wire", "[link][burst]") {
  // 4 TLPs of 100 ps, one every 1000 ps (from a link ten times slower): on the wire at 0,
  // 1000, 2000 and 3000, the last through at 3100; after the first, the wire idles 2700 of
  // the 3000 ps (while the first is on the wire nothing else goes: no idle time then).
  burst_gaps g = burst_gaps::of(0, 100, 3100, 400, 4);
  REQUIRE(g.until_ps == 3100);
  CHECK(g.idle_share == Approx(2700.0 / 3000.0));
  CHECK(g.period_ps == 1000);
  CHECK(g.slot_ps == 100);
  // Nothing goes before the burst's first TLP is through, nor while one of its TLPs is on the
  // wire: TLP by TLP it waits for that one.
  CHECK(g.earliest(50) == 100);
  CHECK(g.earliest(500) == 500);
  CHECK(g.earliest(1030) == 1100);
  CHECK(g.room(500) == Approx(2600 * g.idle_share));
  // A 100 ps TLP sent at 500 goes at once: the burst's TLP that comes in at 1000 follows it.
  CHECK(g.send(500, 100, 3100) == 600);
}

TEST_CASE("burst gaps: beside a burst held back by credits, what goes takes the idle share",
          "[link][burst]") {
  // The same burst, its TLPs all queued and each going once it has credits: what is sent
  // beside it goes between them, at the share of the wire they leave: a 100 ps TLP sent at
  // 500 is through 115 ps later.
  burst_gaps g = burst_gaps::of(0, 100, 3100, 400, 4);
  g.credit_paced = true;
  CHECK(g.send(500, 100, 3100) == 500 + uint64_t(100 / g.idle_share + 0.5));
}

TEST_CASE("burst gaps: what goes in them shares them", "[link][burst]") {
  // Idle 2700 of 3000 ps; a 1000 ps transmission sent at 100 goes at once (through at 1100),
  // and the burst's TLPs that came in meanwhile catch up in the gaps until 100 + 1000 / share
  // = 1211: until then the gaps are taken.
  burst_gaps g = burst_gaps::of(0, 100, 3100, 400, 4);
  CHECK(g.send(100, 1000, 3100) == 1100);
  const uint64_t taken = 100 + uint64_t(1000 / g.idle_share + 0.5);
  // Meanwhile nothing else has room: the next waits (and for the burst's TLP on the wire
  // then, if any).
  CHECK(g.room(500) == 0);
  CHECK(g.earliest(500) == taken);
  CHECK(g.room(taken) == Approx(double(3100 - taken) * g.idle_share));
}

TEST_CASE("burst gaps: what does not fit before the burst's end goes once the wire is free",
          "[link][burst]") {
  const double share = 500.0 / 800.0;  // 2 TLPs of 300 ps over 1100 ps: idle after the first
  for (uint64_t start = 300; start < 1100; start += 50)
    for (uint64_t symbols : {1u, 10u, 100u, 500u, 2000u}) {
      burst_gaps g = burst_gaps::of(0, 300, 1100, 600, 2);
      REQUIRE(g.idle_share == Approx(share));
      const uint64_t end = g.send(start, symbols, 1100);
      // No sooner than its symbols alone allow, no later than after the burst.
      CHECK(end >= start + symbols);
      CHECK(end <= 1100 + symbols);
    }
  // From 900, 200 ps of the wire is left, 125 ps of it idle: 1000 ps of symbols end at
  // 1100 + (1000 - 125) = 1975, or after what else holds the wire past the burst.
  burst_gaps g = burst_gaps::of(0, 300, 1100, 600, 2);
  CHECK(g.send(900, 1000, 1100) == 1100 + 1000 - uint64_t(200 * share));
  burst_gaps h = burst_gaps::of(0, 300, 1100, 600, 2);
  CHECK(h.send(900, 1000, 1500) == 1500 + 1000 - uint64_t(200 * share));
}

TEST_CASE("burst gaps: what may not pass a paced burst waits for the TLPs handed over before it",
          "[link][burst]") {
  // 4 TLPs of 100 ps paced by credits a loop of 1000 ps apart, handed over here 300 ps apart
  // from 200 on: TLP j is on the wire from 1000 j, through at 1000 j + 100.
  burst_gaps g = burst_gaps::of(0, 100, 3100, 400, 4);
  g.credit_paced = true;
  g.queued_ps = 200;
  g.in_step_ps = 300;
  g.tlps = 4;
  CHECK(g.handed_over_by(100) == 0);  // older than the burst: nothing of it is ahead
  CHECK(g.handed_over_by(200) == 1);
  CHECK(g.handed_over_by(650) == 2);  // TLPs 0 and 1 came in by then, 2 at 800
  CHECK(g.handed_over_by(900) == 4 - 1);
  CHECK(g.handed_over_by(5000) == 4);  // all of it: it waits for the burst
  // Behind TLPs 0 and 1 it goes once TLP 1 is through.
  CHECK(g.through(1) == 1100);
  // All handed over at once (no lag): every TLP is ahead of what came after the first.
  g.in_step_ps = 0;
  CHECK(g.handed_over_by(200) == 4);
}

TEST_CASE("burst gaps: right after the first TLP, the whole idle time is room", "[link][burst]") {
  // 2 TLPs of 300 ps, the second ready 800 ps after the first: the wire idles 500 ps between
  // them. TLP by TLP, a 500 ps TLP that comes in as the first is through fills that idle time
  // exactly and ends as the second starts; it fits in the gaps and is through at 800.
  burst_gaps g = burst_gaps::of(0, 300, 1100, 600, 2);
  CHECK(g.room(300) == Approx(500));
  CHECK(g.send(300, 500, 1100) == 800);
  // Six 64 B completions of 29409 ps arriving 37640 ps apart (gen-586) leave room for six
  // 9357 ps read requests after the first: five between them and one after the last.
  const uint64_t first = 29409, end = 29409 + 5 * 37640, symbols = 6 * 29409;
  const burst_gaps c = burst_gaps::of(0, first, end, symbols, 6);
  CHECK(c.room(first) == Approx(double(end - symbols)).epsilon(1e-9));
}
