// Burst fidelity's measure of the credits a class would have needed TLP by TLP
// (models/pcie/credit_demand.h): TLPs started within one credit loop are in flight at once.
#include <catch2/catch.hpp>

#include "models/pcie/credit_demand.h"

using namespace p2psim::pcie;

TEST_CASE("credit demand: TLPs back to back hold a loop's worth of credits", "[pcie][credits]") {
  // 64 B completions of 88 wire bytes at 31.7 ps/B (Gen5 x8) take 2,790 ps; a loop of
  // 2 x 34 ns of latency and a switch's 288 ns hold, plus that, is 358,790 ps: 128.6 TLPs
  // started within one loop, so TLP by TLP the receiver needs 129 header credits.
  const uint64_t tlp = 2'790, rest = 2 * 34'000 + 288'000;
  credit_demand d(credit_loop{0, rest, true});
  for (uint64_t i = 0; i < 1000; ++i) d.sent(i * tlp, i * tlp, 1, 4, tlp);
  CHECK(d.most().header == 129);
  CHECK(d.most().data == 129 * 4);
  CHECK(d.longest_loop_ps() == tlp + rest);

  // The same TLPs as bursts of 256 (each TLP spread evenly over the burst) need as many.
  credit_demand b(credit_loop{0, rest, true});
  for (uint64_t i = 0; i < 1000; i += 256) b.sent(i * tlp, (i + 255) * tlp, 256, 1024, tlp);
  CHECK(b.most().header == 129);
  CHECK(b.most().data == 129 * 4);
}

TEST_CASE("credit demand: never more than were sent", "[pcie][credits]") {
  // A 4 KiB read in 64 completions of 64 B: all of them in flight at once, no more.
  credit_demand d(credit_loop{0, 356'000, true});
  d.sent(0, 63 * 2'790, 64, 256, 2'790);
  CHECK(d.most().header == 64);
  CHECK(d.most().data == 256);
}

TEST_CASE("credit demand: TLPs a loop apart hold one credit each", "[pcie][credits]") {
  // One TLP per loop (a slow source): the credit of each is back before the next starts.
  const uint64_t tlp = 10'000, rest = 90'000;
  credit_demand d(credit_loop{0, rest, true});
  for (uint64_t i = 0; i < 50; ++i) d.sent(i * (tlp + rest), i * (tlp + rest), 1, 16, tlp);
  CHECK(d.most().header == 1);
  CHECK(d.most().data == 16);
  // Half a loop apart: two in flight.
  credit_demand h(credit_loop{0, rest, true});
  for (uint64_t i = 0; i < 50; ++i) h.sent(i * 50'000, i * 50'000, 1, 16, tlp);
  CHECK(h.most().header == 2);
}

TEST_CASE("credit demand: a burst trickling in holds what its rate needs", "[pcie][credits]") {
  // 100 TLPs spread over 10 loops: ten TLPs started within any one loop (eleven at its ends).
  const uint64_t tlp = 1'000, rest = 99'000;
  credit_demand d(credit_loop{0, rest, true});
  d.sent(0, 99 * 10'000, 100, 1'600, tlp);
  CHECK(d.most().header >= 10);
  CHECK(d.most().header <= 11);
}

TEST_CASE("credit loop: a cut-through receiver's hold overlaps the TLP's symbols",
          "[pcie][credits]") {
  // 2 x 34 ns there and back, a 288 ns hold: a 2,790 ps TLP is back 356 ns after it started
  // at a switch that passes it on 288 ns after its header, 358.79 ns at one that stores it.
  CHECK(credit_loop{68'000, 288'000, false}.of(2'790) == 356'000);
  CHECK(credit_loop{68'000, 288'000, true}.of(2'790) == 358'790);
  // A TLP longer than the hold: its tail is in last.
  CHECK(credit_loop{68'000, 1'000, false}.of(2'790) == 70'790);
}
