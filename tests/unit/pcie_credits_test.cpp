// Transmitter-side credit-based flow control (PCIe Base Spec 2.6.1; models/pcie/credits.h).
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "models/pcie/credits.h"

using namespace p2psim::pcie;

namespace {

tlp_header make(tlp_type type, uint32_t length) {
  tlp_header h;
  h.type = type;
  h.length = length;
  return h;
}

}  // namespace

TEST_CASE("credits: cost of a TLP", "[pcie][credits]") {
  // PCIe Base Spec 2.6.1: one header credit per TLP; one data credit per 16 bytes (4 DW)
  // of payload, rounded up.
  CHECK(data_credit_bytes == 16);
  const credit_cost w256 = credit_cost_of(make(tlp_type::mwr, 256));
  CHECK(w256.header == 1);
  CHECK(w256.data == 16);
  CHECK(credit_cost_of(make(tlp_type::mwr, 4)).data == 1);
  CHECK(credit_cost_of(make(tlp_type::mwr, 16)).data == 1);
  CHECK(credit_cost_of(make(tlp_type::mwr, 17)).data == 2);
  CHECK(credit_cost_of(make(tlp_type::cpld, 64)).data == 4);
  CHECK(credit_cost_of(make(tlp_type::cpld, 4096)).data == 256);
  // A read request carries no data, whatever length it asks for.
  const credit_cost rd = credit_cost_of(make(tlp_type::mrd, 4096));
  CHECK(rd.header == 1);
  CHECK(rd.data == 0);
  CHECK(credit_cost_of(make(tlp_type::cpl, 0)).data == 0);
  CHECK(credit_cost_of(make(tlp_type::cpl, 0)).header == 1);
}

TEST_CASE("credits: consume until the pool is empty", "[pcie][credits]") {
  credit_limits l;
  l.ph = 4;
  l.pd = 40;  // 640 bytes
  credit_gate g(l);
  CHECK_FALSE(g.infinite(fc_class::posted));
  CHECK(g.header_available(fc_class::posted) == 4);
  CHECK(g.data_available(fc_class::posted) == 40);

  const credit_cost w256{1, 16};
  CHECK(g.can_send(fc_class::posted, w256));
  g.consume(fc_class::posted, w256);
  g.consume(fc_class::posted, w256);
  CHECK(g.header_available(fc_class::posted) == 2);
  CHECK(g.data_available(fc_class::posted) == 8);
  // Headers left, but not enough data credits.
  CHECK_FALSE(g.can_send(fc_class::posted, w256));
  CHECK(g.can_send(fc_class::posted, credit_cost{1, 8}));
  g.consume(fc_class::posted, credit_cost{1, 8});
  g.consume(fc_class::posted, credit_cost{1, 0});
  // Out of header credits: even a zero-data TLP must wait.
  CHECK_FALSE(g.can_send(fc_class::posted, credit_cost{1, 0}));
}

TEST_CASE("credits: 0 advertises an infinite pool", "[pcie][credits]") {
  // PCIe Base Spec 2.6.1: an advertised value of 0 means infinite credits.
  credit_limits l;
  l.nph = 2;  // header-limited, data infinite
  credit_gate g(l);
  CHECK(g.infinite(fc_class::posted));
  CHECK(g.infinite(fc_class::completion));
  CHECK_FALSE(g.infinite(fc_class::non_posted));
  for (int i = 0; i < 1000; ++i) {
    REQUIRE(g.can_send(fc_class::completion, credit_cost{1, 256}));
    g.consume(fc_class::completion, credit_cost{1, 256});
  }
  CHECK(g.can_send(fc_class::posted, credit_cost{1, 1u << 20}));
  CHECK(g.can_send(fc_class::non_posted, credit_cost{1, 1u << 20}));
  g.consume(fc_class::non_posted, credit_cost{1, 0});
  g.consume(fc_class::non_posted, credit_cost{1, 0});
  CHECK_FALSE(g.can_send(fc_class::non_posted, credit_cost{1, 0}));
  // Returns to an infinite pool are dropped, not queued.
  g.schedule_return(fc_class::completion, credit_cost{1, 16}, 100);
  CHECK(g.next_return() == 0);
}

TEST_CASE("credits: a return is seen only once its UpdateFC arrives", "[pcie][credits]") {
  credit_limits l;
  l.cplh = 1;
  l.cpld = 16;
  credit_gate g(l);
  const credit_cost c{1, 16};
  g.consume(fc_class::completion, c);
  CHECK_FALSE(g.can_send(fc_class::completion, c));

  g.schedule_return(fc_class::completion, c, 5000);
  CHECK(g.next_return() == 5000);
  CHECK_FALSE(g.can_send(fc_class::completion, c));  // not before advance()
  g.advance(4999);
  CHECK_FALSE(g.can_send(fc_class::completion, c));
  CHECK(g.header_available(fc_class::completion) == 0);
  g.advance(5000);
  CHECK(g.can_send(fc_class::completion, c));
  CHECK(g.header_available(fc_class::completion) == 1);
  CHECK(g.data_available(fc_class::completion) == 16);
  CHECK(g.next_return() == 0);
}

TEST_CASE("credits: pending returns come back in arrival order", "[pcie][credits]") {
  credit_limits l;
  l.ph = 3;
  l.pd = 30;
  l.nph = 2;
  credit_gate g(l);
  g.consume(fc_class::posted, credit_cost{1, 10});
  g.consume(fc_class::posted, credit_cost{1, 10});
  g.consume(fc_class::posted, credit_cost{1, 10});
  g.consume(fc_class::non_posted, credit_cost{2, 0});
  CHECK(g.header_available(fc_class::posted) == 0);

  // Scheduled out of order; the earliest comes first.
  g.schedule_return(fc_class::posted, credit_cost{1, 10}, 300);
  g.schedule_return(fc_class::posted, credit_cost{1, 10}, 100);
  g.schedule_return(fc_class::non_posted, credit_cost{2, 0}, 200);
  g.schedule_return(fc_class::posted, credit_cost{1, 10}, 400);
  CHECK(g.next_return() == 100);

  g.advance(150);
  CHECK(g.header_available(fc_class::posted) == 1);
  CHECK(g.data_available(fc_class::posted) == 10);
  CHECK(g.header_available(fc_class::non_posted) == 0);
  CHECK(g.next_return() == 200);

  g.advance(350);  // absorbs the returns at 200 and 300 together
  CHECK(g.header_available(fc_class::non_posted) == 2);
  CHECK(g.header_available(fc_class::posted) == 2);
  CHECK(g.data_available(fc_class::posted) == 20);
  CHECK(g.next_return() == 400);

  g.advance(10'000);
  CHECK(g.header_available(fc_class::posted) == 3);
  CHECK(g.data_available(fc_class::posted) == 30);
  CHECK(g.next_return() == 0);
}

TEST_CASE("credits: half-infinite pool returns only the finite part", "[pcie][credits]") {
  credit_limits l;
  l.ph = 2;  // header finite, data infinite
  credit_gate g(l);
  CHECK_FALSE(g.infinite(fc_class::posted));
  g.consume(fc_class::posted, credit_cost{1, 64});
  CHECK(g.header_available(fc_class::posted) == 1);
  g.schedule_return(fc_class::posted, credit_cost{1, 64}, 10);
  CHECK(g.next_return() == 10);
  g.advance(10);
  CHECK(g.header_available(fc_class::posted) == 2);
  CHECK(g.can_send(fc_class::posted, credit_cost{2, 1u << 30}));
}

TEST_CASE("credits: bursts are double-buffered beyond the advertised credits",
          "[pcie][credits][burst]") {
  credit_limits l;
  l.ph = 4;
  l.pd = 64;  // 1 KiB
  credit_gate g(l);
  const credit_cost burst{16, 256};  // 16 TLPs, 4 KiB: more than the receiver advertises
  CHECK_FALSE(g.can_send(fc_class::posted, burst));
  REQUIRE(g.can_start_burst(fc_class::posted, burst));
  g.consume(fc_class::posted, burst);
  CHECK(g.header_available(fc_class::posted) == 4 - 16);
  REQUIRE(g.can_start_burst(fc_class::posted, burst));  // the second of a double buffer
  g.consume(fc_class::posted, burst);
  CHECK_FALSE(g.can_start_burst(fc_class::posted, burst));  // a third waits for a return
  g.schedule_return(fc_class::posted, burst, 100);
  g.schedule_return(fc_class::posted, burst, 100);
  g.advance(100);
  CHECK(g.header_available(fc_class::posted) == 4);
  CHECK(g.data_available(fc_class::posted) == 64);
  CHECK(g.can_start_burst(fc_class::posted, burst));
}

TEST_CASE("credits: what is outstanding counts returns on their way as back, and over-returns",
          "[pcie][credits]") {
  credit_limits l;
  l.ph = 8;
  l.pd = 0;  // data infinite: never outstanding
  l.nph = 4;
  credit_gate g(l);
  g.consume(fc_class::posted, credit_cost{3, 48});
  g.consume(fc_class::non_posted, credit_cost{1, 0});
  CHECK(g.outstanding(fc_class::posted).header == 3);
  CHECK(g.outstanding(fc_class::posted).data == 0);
  CHECK(g.outstanding(fc_class::non_posted).header == 1);
  CHECK(g.outstanding(fc_class::completion).header == 0);        // cplh 0: infinite
  g.schedule_return(fc_class::posted, credit_cost{2, 32}, 500);  // not absorbed yet
  CHECK(g.outstanding(fc_class::posted).header == 1);
  g.schedule_return(fc_class::non_posted, credit_cost{1, 0}, 10);
  g.advance(10);
  CHECK(g.outstanding(fc_class::non_posted).header == 0);
  // A receiver that frees a TLP with more header credits than it took: below zero.
  g.schedule_return(fc_class::posted, credit_cost{5, 80}, 600);
  g.advance(600);
  CHECK(g.outstanding(fc_class::posted).header == -4);
}

TEST_CASE("credits: a burst of at most half the buffer waits for its first TLP's credits",
          "[pcie][credits][burst]") {
  credit_limits l;
  l.ph = 64;
  l.pd = 1024;  // 16 KiB
  credit_gate g(l);
  const credit_cost one_tlp_burst{1, 256};  // a 4 KiB TLP: a quarter of the buffer
  for (int i = 0; i < 4; ++i) {
    REQUIRE(g.can_start_burst(fc_class::posted, one_tlp_burst));
    g.consume(fc_class::posted, one_tlp_burst);
  }
  // The buffer is full: TLP by TLP the fifth waits, and so does a burst of it (double
  // buffering would let it go, 4 KiB beyond what the receiver advertised).
  CHECK_FALSE(g.can_start_burst(fc_class::posted, one_tlp_burst));
  g.schedule_return(fc_class::posted, one_tlp_burst, 50);
  g.advance(50);
  CHECK(g.can_start_burst(fc_class::posted, one_tlp_burst));
  // A burst of 32 TLPs of 256 B (8 KiB, half the buffer) may start once one TLP's credits
  // (16 data credits) are free: it goes as its first TLP would.
  credit_gate h(l);
  h.consume(fc_class::posted, credit_cost{63, 1008});
  CHECK(h.can_start_burst(fc_class::posted, credit_cost{32, 512}));
  h.consume(fc_class::posted, credit_cost{1, 16});
  CHECK_FALSE(h.can_start_burst(fc_class::posted, credit_cost{32, 512}));
}

// docs/architecture.md, "Flow control"; tests/data/generated/burst_after_a_larger_burst.
TEST_CASE("credits: right after a larger burst, a burst within half the buffer takes its slack",
          "[pcie][credits][burst]") {
  credit_limits l;
  l.ph = 64;
  l.pd = 0;  // data infinite: headers decide
  const credit_cost large{64, 256}, half{32, 128};
  // Two bursts larger than half the buffer (double buffered: 64 owed beyond it), the first
  // returned: nothing free, the second's credits still to come whole.
  auto after_two_large = [&](bool frees_whole) {
    credit_gate g(l);
    g.set_receiver_frees_bursts_whole(frees_whole);
    g.consume(fc_class::posted, large);
    g.consume(fc_class::posted, large);
    g.schedule_return(fc_class::posted, large, 100);
    g.advance(100);
    return g;
  };
  credit_gate g = after_two_large(true);  // an endpoint
  REQUIRE(g.header_available(fc_class::posted) == 0);
  // Its first TLP finds no credits, but the last burst, larger than half the buffer, is
  // freed whole: the half-buffer burst may owe less than itself beyond it.
  CHECK_FALSE(g.can_send(fc_class::posted, credit_cost{1, 4}));
  CHECK(g.can_start_burst(fc_class::posted, half));
  g.consume(fc_class::posted, half);
  // After it, the next half-buffer burst waits for its first TLP's credits again.
  CHECK_FALSE(g.can_start_burst(fc_class::posted, half));
  g.schedule_return(fc_class::posted, large, 200);
  g.advance(200);
  CHECK(g.can_start_burst(fc_class::posted, half));
  // A TLP alone never takes the slack: it is one TLP, with or without a larger burst before.
  CHECK_FALSE(after_two_large(true).can_start_burst(fc_class::posted, credit_cost{1, 4}));
  // A switch or root complex frees a burst TLP by TLP as its TLPs leave: no slack.
  CHECK_FALSE(after_two_large(false).can_start_burst(fc_class::posted, half));
}

TEST_CASE("credits: a burst of one TLP waits for that TLP's credits", "[pcie][credits][burst]") {
  credit_limits l;
  l.ph = 21;
  l.pd = 505;  // room for one 4 KiB TLP (256 data credits), not two
  credit_gate g(l);
  const credit_cost tlp_4k{1, 256};
  REQUIRE(g.can_start_burst(fc_class::posted, tlp_4k));
  g.consume(fc_class::posted, tlp_4k);
  CHECK_FALSE(g.can_start_burst(fc_class::posted, tlp_4k));  // 249 free: as TLP by TLP
  // A burst of two such TLPs is more than half the buffer: double-buffered.
  CHECK(g.can_start_burst(fc_class::posted, credit_cost{2, 512}));
}

TEST_CASE("credits: a burst freed TLP by TLP comes back TLP by TLP", "[pcie][credits][burst]") {
  // A switch frees a forwarded burst's ingress buffer as each of its TLPs leaves: 4 TLPs of
  // 256 B, the first back at 1000 ps, one every 100 ps.
  credit_limits l;
  l.ph = 8;
  l.pd = 128;
  credit_gate g(l);
  g.consume(fc_class::posted, credit_cost{8, 128});
  g.schedule_return_spread(fc_class::posted, credit_cost{4, 64}, 1000, 4, 300);
  CHECK(g.next_return() == 1000);
  g.advance(999);
  CHECK(g.data_available(fc_class::posted) == 0);
  g.advance(1000);
  CHECK(g.header_available(fc_class::posted) == 1);
  CHECK(g.data_available(fc_class::posted) == 16);
  CHECK(g.next_return() == 1100);
  g.advance(1250);  // the second and third
  CHECK(g.data_available(fc_class::posted) == 48);
  CHECK(g.outstanding(fc_class::posted).data == 64);  // the fourth on its way counts as back
  g.advance(1300);
  CHECK(g.data_available(fc_class::posted) == 64);
  CHECK(g.next_return() == 0);
  // Of one TLP, or over no time, it comes back whole.
  g.schedule_return_spread(fc_class::posted, credit_cost{2, 32}, 2000, 2, 0);
  g.advance(2000);
  CHECK(g.data_available(fc_class::posted) == 96);
}

TEST_CASE("credits: a spread return gives what its TLPs returned one by one would",
          "[pcie][credits][burst]") {
  // Reference: the same returns, each TLP's share on its own at its own time.
  std::mt19937_64 rng(18);
  for (int round = 0; round < 200; ++round) {
    credit_limits l;
    l.ph = 1000;
    l.pd = 100000;
    credit_gate spread(l), single(l);
    spread.consume(fc_class::posted, credit_cost{1000, 100000});
    single.consume(fc_class::posted, credit_cost{1000, 100000});
    uint64_t t = 0;
    for (int i = 0; i < 20; ++i) {
      const uint32_t tlps = 1 + uint32_t(rng() % 8);
      const uint32_t data = tlps * uint32_t(1 + rng() % 64) - uint32_t(rng() % tlps);
      const uint64_t at = t + rng() % 400, step = rng() % 100;
      spread.schedule_return_spread(fc_class::posted, credit_cost{tlps, data}, at, tlps,
                                    step * (tlps - 1));
      for (uint32_t j = 0; j < tlps;
           ++j)  // TLP j's share: what the first j+1 have less the first j
        single.schedule_return(
            fc_class::posted,
            credit_cost{1, uint32_t(uint64_t(data) * (j + 1) / tlps - uint64_t(data) * j / tlps)},
            at + j * step);
      t += rng() % 300;
      const uint64_t probe = t + rng() % 500;
      spread.advance(probe);
      single.advance(probe);
      INFO("round " << round << " return " << i << " at " << probe);
      REQUIRE(spread.header_available(fc_class::posted) ==
              single.header_available(fc_class::posted));
      REQUIRE(spread.data_available(fc_class::posted) == single.data_available(fc_class::posted));
      REQUIRE(spread.next_return() == single.next_return());
      // Returns still on their way count as back, whichever ring holds them.
      REQUIRE(spread.outstanding(fc_class::posted).header ==
              single.outstanding(fc_class::posted).header);
      REQUIRE(spread.outstanding(fc_class::posted).data ==
              single.outstanding(fc_class::posted).data);
      t = std::max(t, probe);
    }
  }
}
