// Credit-based flow control as seen by a transmitter (PCIe Base Spec 2.6.1).
// The receiver advertises buffer space per class in header credits (one TLP) and data credits
// (16 bytes). The transmitter spends credits when it starts a TLP; the receiver returns them
// with UpdateFC DLLPs when it frees the buffer. Returns are recorded with the simulated time
// they reach the transmitter and absorbed lazily, so a link that is not short of credits costs
// no event for them.
#pragma once

#include <array>
#include <cstdint>
#include "models/pcie/fifo.h"

#include "models/pcie/tlp.h"

namespace p2psim::pcie {

inline constexpr uint32_t data_credit_bytes = 16;

struct credit_cost {
  uint32_t header = 1;
  uint32_t data = 0;
};
// A difference of credits (outstanding, below zero when over-returned).
struct credit_balance {
  int64_t header = 0, data = 0;
};
inline credit_cost credit_cost_of(const tlp_header& h) {  // on every TLP's path: inline
  credit_cost c;
  if (has_data(h.type)) c.data = (h.length + data_credit_bytes - 1) / data_credit_bytes;
  return c;
}

struct credit_limits {  // 0 = infinite
  uint32_t ph = 0, pd = 0, nph = 0, npd = 0, cplh = 0, cpld = 0;
};

class credit_gate {
 public:
  using time_ps = uint64_t;

  explicit credit_gate(const credit_limits& limits = {});

  // Absorbs every return that has arrived by `now`. Inline, as can_send: both run several
  // times per TLP, and most often find nothing to do.
  void advance(time_ps now) {
    if (m_next_arrival <= now) absorb(now);
  }
  bool can_send(fc_class c, credit_cost cost) const {
    const pool& p = m_avail[int(c)];
    return (p.inf_header || p.header >= cost.header) && (p.inf_data || p.data >= cost.data);
  }
  // Burst fidelity: a burst stands for many TLPs, often more than a receiver advertises. One
  // of at most half the advertised buffer, or of one TLP, starts when its first TLP has its
  // credits, as that TLP would. A larger one may start while less than one burst is owed beyond the
  // advertised buffer (available + cost > 0): a receiver holds two bursts at a time, double
  // buffering at burst granularity. consume() then takes the pool below zero.
  bool can_start_burst(fc_class c, credit_cost cost) const;
  // The receiver frees a burst whole once all of it is in (an endpoint), not TLP by TLP as
  // its TLPs leave (a switch or root complex): can_start_burst gives the burst after a larger
  // one that burst's slack.
  void set_receiver_frees_bursts_whole(bool whole) { m_frees_whole = whole; }
  void consume(fc_class c, credit_cost cost) {  // every TLP: inline
    pool& p = m_avail[int(c)];
    if (cost.header > 1) p.after_large_burst = !two_fit(c, cost);
    if (!p.inf_header) p.header -= cost.header;
    if (!p.inf_data) p.data -= cost.data;
  }
  // The receiver freed `cost` of class `c`; the transmitter sees it at `arrival`.
  void schedule_return(fc_class c, credit_cost cost, time_ps arrival);
  // The same, `tlps` TLPs' worth coming back evenly, the first at `arrival` and the last
  // `span` later.
  void schedule_return_spread(fc_class c, credit_cost cost, time_ps arrival, uint32_t tlps,
                              time_ps span);
  // Earliest pending return, or 0 when none is pending.
  time_ps next_return() const { return m_next_arrival == no_return ? 0 : m_next_arrival; }
  bool infinite(fc_class c) const;
  // Credits of class `c` the receiver holds or has not yet been seen to return, counting the
  // returns still on their way as returned: zero once every TLP sent has been freed. Below
  // zero, more came back than was taken (a model error: a receiver freed a TLP twice, or
  // freed it with another size than it was sent with).
  credit_balance outstanding(fc_class c) const;
  int64_t header_available(fc_class c) const { return m_avail[int(c)].header; }
  int64_t data_available(fc_class c) const { return m_avail[int(c)].data; }

 private:
  struct pool {
    int64_t header = 0, data = 0;  // below zero only after a burst
    bool inf_header = false, inf_data = false;
    // The last burst was larger than half the advertised buffer (can_start_burst).
    bool after_large_burst = false;
  };
  void absorb(time_ps now);
  bool two_fit(fc_class c, credit_cost cost) const;  // two bursts of `cost` fit the buffer
  credit_balance limits_of(fc_class c) const;        // advertised (0: infinite)
  // Credits on their way back, arriving at `arrival`: a TLP's (every return at TLP
  // fidelity), or a burst's freed whole.
  struct pending_return {
    time_ps arrival;
    credit_cost cost;
    fc_class cls;
  };
  // A burst a switch freed TLP by TLP as its TLPs left: `tlps` TLPs' worth of `all.cost` in
  // all, TLP j's at `all.arrival` + j * `step`, where `all.arrival` is that of the first TLP
  // still to come (`done` have). Kept apart, so a TLP's return stays small.
  struct spread_return {
    pending_return all;
    uint32_t tlps = 1, done = 0;
    time_ps step = 0;
  };
  static credit_cost first_of(const spread_return& r, uint32_t k);       // its first k TLPs' worth
  static credit_cost still_to_come(const spread_return& r, uint32_t k);  // its next k TLPs'
  // Leaves out of `r` what an infinite pool does not count; false if that is all of it.
  bool counted(pending_return& r) const;
  void insert(pending_return r);  // by arrival
  void insert(spread_return r);
  static constexpr time_ps no_return = ~time_ps(0);
  std::array<pool, fc_class_count> m_avail;
  bool m_frees_whole = false;
  credit_limits m_limits;
  // By arrival. A receiver frees buffers nearly in the order it got them, so a return almost
  // always goes at the back: a sorted ring beats a heap on this per-TLP path. Credits add up
  // in any order, so the two rings are absorbed one after the other.
  fifo<pending_return> m_pending;
  fifo<spread_return> m_spread;
  time_ps m_next_arrival = no_return;  // the earlier of the two rings' fronts
};

}  // namespace p2psim::pcie
