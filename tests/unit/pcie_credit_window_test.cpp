// Burst fidelity's pacing by a receiver's credits (models/pcie/credit_window.h): within any
// credit loop no more TLPs of a class start than the receiver advertises credits for.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "models/pcie/credit_window.h"

using namespace p2psim::pcie;

namespace {
// A loop of 100 ps of latency both ways and a 50 ps hold from the header (cut-through), TLPs
// of 10 ps: 150 ps.
constexpr uint64_t symbols = 10, loop = 150;
constexpr credit_loop cut{100, 50, false};
}  // namespace

TEST_CASE("credit window: four header credits let four TLPs start per loop", "[pcie][credits]") {
  // TLP by TLP: 0, 10, 20, 30, then the fifth waits for the first's credits (150), ...
  credit_window tlps(4, 0, cut);
  std::vector<uint64_t> starts;
  uint64_t t = 0;
  for (int i = 0; i < 12; ++i) {
    t = tlps.place(i ? t + symbols : 0, 1, 0, 0, 0, 0, symbols);
    starts.push_back(t);
  }
  CHECK(starts == std::vector<uint64_t>{0, 10, 20, 30, 150, 160, 170, 180, 300, 310, 320, 330});
  // The same twelve as one burst: its last TLP starts where the twelfth did.
  credit_window burst(4, 0, cut);
  CHECK(burst.place(0, 12, 0, symbols, 0, 0, symbols) == 330);
}

TEST_CASE("credit window: data credits pace as headers do", "[pcie][credits]") {
  // 64 data credits, 256 B TLPs of 16 each: four per loop, as above.
  credit_window w(0, 64, cut);
  CHECK(w.limits());
  CHECK(w.place(0, 12, 12 * 16, symbols, 0, 0, symbols) == 330);
  // A TLP larger than the whole window still goes, alone.
  credit_window small(0, 8, cut);
  CHECK(small.place(0, 2, 32, symbols, 0, 0, symbols) == loop);
}

TEST_CASE("credit window: infinite credits and a loop shorter than the TLPs hold nothing back",
          "[pcie][credits]") {
  credit_window none(0, 0, cut);
  CHECK_FALSE(none.limits());
  // Four credits, but four TLPs take longer than the loop: back to back throughout.
  credit_window w(4, 0, cut);
  CHECK(w.place(0, 100, 0, 40, 0, 0, 40) == 99 * 40);
}

TEST_CASE("credit window: a burst's TLPs are no sooner than they come in", "[pcie][credits]") {
  // Ready from 0 over a 900 ps lag: TLP k of 10 no sooner than 100 k.
  credit_window w(0, 0, cut);
  CHECK(w.place(0, 10, 0, symbols, 0, 900, symbols) == 900);
  // Paced and trickling in: whichever holds it back more.
  credit_window p(4, 0, cut);
  CHECK(p.place(0, 8, 0, symbols, 0, 70, symbols) == 180);
}

TEST_CASE("credit window: any sequence keeps to the credits, each TLP as soon as they allow",
          "[pcie][credits]") {
  std::mt19937_64 rng(7);
  for (int run = 0; run < 200; ++run) {
    const uint32_t headers = 1 + rng() % 8, data = rng() % 2 ? 0 : 8 + rng() % 64;
    credit_window w(headers, data, cut);
    struct tlp {
      uint64_t start;
      uint32_t data;
    };
    std::vector<tlp> sent;
    uint64_t proposed = 0;
    for (int i = 0; i < 60; ++i) {
      proposed += rng() % 60;
      const uint32_t d = 1 + rng() % 8;
      const uint64_t s = w.place(proposed, 1, d, 0, 0, 0, symbols);
      REQUIRE(s >= proposed);
      // As soon as allowed: at the proposed time, or when an earlier TLP's credits came back.
      bool earliest = s == proposed;
      for (const tlp& o : sent) earliest = earliest || s == o.start + loop;
      CHECK(earliest);
      sent.push_back({s, d});
      proposed = s;
    }
    // Within any loop, no more than the credits.
    for (const tlp& a : sent) {
      uint32_t n = 0, in = 0;
      for (const tlp& b : sent)
        if (b.start >= a.start && b.start < a.start + loop) ++n, in += b.data;
      CHECK(n <= headers);
      if (data) CHECK(in <= data);
    }
  }
}

TEST_CASE("credit window: a burst starts its TLPs where they would start one by one",
          "[pcie][credits]") {
  std::mt19937_64 rng(11);
  for (int run = 0; run < 300; ++run) {
    const uint32_t headers = 1 + rng() % 16, data = rng() % 2 ? 0 : 16 + rng() % 128;
    credit_window whole(headers, data, cut), one_by_one(headers, data, cut);
    uint64_t first = 0;
    for (int b = 0; b < 20; ++b) {
      first += rng() % 400;
      const uint32_t tlps = 1 + rng() % 24, credits = tlps * (1 + rng() % 4) + rng() % tlps;
      const uint64_t spacing = 1 + rng() % 20;
      const uint64_t last = whole.place(first, tlps, credits, spacing, first, 0, symbols);
      uint64_t t = 0;
      for (uint32_t k = 0; k < tlps; ++k) {
        const uint32_t d = credits / tlps + (k < credits % tlps);
        t = one_by_one.place(k ? t + spacing : first, 1, d, 0, 0, 0, symbols);
      }
      REQUIRE(last == t);
      first = last;  // the next burst starts once this one is through
    }
  }
}

TEST_CASE("credit window: a receiver sure to hold a TLP longer lengthens its loop",
          "[pcie][credits]") {
  // One header credit. The loop's own hold (50 ps from the header) lets a TLP start every
  // 150 ps; a receiver that holds these TLPs 200 ps (a root complex forwarding them to a
  // peer) frees each credit 100 + 200 ps after the TLP started.
  credit_window w(1, 0, cut);
  CHECK(w.place(0, 3, 0, symbols, 0, 0, symbols) == 2 * loop);
  credit_window held(1, 0, cut);
  CHECK(held.place(0, 3, 0, symbols, 0, 0, symbols, 200) == 2 * 300);
  // A hold shorter than the loop's own changes nothing.
  credit_window shorter(1, 0, cut);
  CHECK(shorter.place(0, 3, 0, symbols, 0, 0, symbols, 20) == 2 * loop);
}
