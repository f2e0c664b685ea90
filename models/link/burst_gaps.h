// Burst fidelity: the idle time a burst leaves on the wire while its TLPs go. A burst whose
// TLPs trickle in from a slower link, or wait for the receiver's credits, holds the wire for
// longer than its symbols take; TLP by TLP the wire idles between its TLPs, and a TLP of
// another stream (or class) that comes in meanwhile goes in those gaps instead of waiting for
// the burst's last TLP (docs/architecture.md, "Burst fidelity", "Gaps").
// The burst's TLPs are taken as spread evenly over its time on the wire. What is sent in the
// gaps waits for the burst's TLP on the wire then, and for what went in them before; it takes
// the share of the wire the burst leaves idle until the burst's last TLP is through (send()
// says how it goes).
// Plain C++: a link direction opens one when it starts a burst and fills it in pump().
#pragma once

#include <algorithm>
#include <cstdint>

#include "models/pcie/tlp.h"

namespace p2psim::link {

struct burst_gaps {
  uint64_t from_ps = 0;   // the burst's first TLP is through: nothing goes in before
  uint64_t until_ps = 0;  // its last TLP is through (until_ps <= from_ps: no gaps)
  double idle_share = 0;  // of the wire's time from from_ps to until_ps
  // Its TLPs: TLP j is on the wire from start_ps + j * period_ps for slot_ps.
  uint64_t start_ps = 0, period_ps = 0, slot_ps = 0;
  uint64_t taken_until_ps = 0;  // what went in the gaps takes them until then
  uint32_t stream = 0;          // the burst's
  int cls = 0;                  // its flow-control class
  // Its TLPs wait for the receiver's credits (all of them are queued here, TLP by TLP), not
  // for their own arrival: what goes in the gaps passes them, as the ordering table allows.
  bool credit_paced = false;
  pcie::tlp_header header;  // the burst's, for the ordering table (kept if credit_paced)
  // Its TLPs were handed over here from queued_ps on, in_step_ps apart (kept if credit_paced).
  uint64_t queued_ps = 0, in_step_ps = 0;
  uint32_t tlps = 0;

  // The gaps of a burst of `tlps` TLPs that started at `start_ps`, whose first TLP is
  // through at `first_ps` and last at `end_ps`, while their symbols (DLLPs included) take
  // `symbols_ps` of that time. None if it has no idle time.
  static burst_gaps of(uint64_t start_ps, uint64_t first_ps, uint64_t end_ps, uint64_t symbols_ps,
                       uint32_t tlps) {
    burst_gaps g;
    if (tlps < 2 || end_ps <= start_ps + symbols_ps || end_ps <= first_ps) return g;
    g.from_ps = first_ps;
    g.until_ps = end_ps;
    // The idle time is after the first TLP: while it is on the wire nothing else goes. Spread
    // over the first TLP's time too, the share left a TLP that came in right after it less
    // room than TLP by TLP (gen-586: a P2P read's proxied requests beside its completions
    // ran 1.5% behind).
    const uint64_t after_first = first_ps - start_ps;
    if (symbols_ps <= after_first) return burst_gaps{};
    g.idle_share = 1.0 - double(symbols_ps - after_first) / double(end_ps - first_ps);
    g.start_ps = start_ps;
    g.slot_ps = symbols_ps / tlps;
    g.period_ps = (end_ps - start_ps - g.slot_ps) / (tlps - 1);
    return g;
  }
  // Of its TLPs, how many were handed over here no later than `t`: TLP by TLP, what may not
  // pass them waits for those, not for the ones that came in after it.
  uint32_t handed_over_by(uint64_t t) const {
    if (t < queued_ps) return 0;
    if (!in_step_ps) return tlps;
    return uint32_t(std::min<uint64_t>(tlps, (t - queued_ps) / in_step_ps + 1));
  }
  // When its TLP j is through, as its TLPs are spread over its time.
  uint64_t through(uint32_t j) const { return start_ps + j * period_ps + slot_ps; }
  // How much of the wire's time the gaps leave free from `t` on (the symbols that fit).
  double room(uint64_t t) const {
    return t < until_ps && t >= taken_until_ps ? double(until_ps - t) * idle_share : 0;
  }
  // The earliest a transmission may start in the gaps, no sooner than `now`: after the
  // burst's first TLP and what went in the gaps before, once the burst's TLP on the wire then
  // is through. until_ps or later: not in them (nor in gaps of less than 1% of the wire:
  // nothing that waits for a share that small would go much sooner TLP by TLP).
  uint64_t earliest(uint64_t now) const {
    if (idle_share < min_share) return until_ps;
    uint64_t t = std::max({now, from_ps, taken_until_ps});
    if (t < until_ps && period_ps > slot_ps)
      if (const uint64_t into = (t - start_ps) % period_ps; into < slot_ps) t += slot_ps - into;
    return t;
  }
  // A transmission whose symbols take `symbols_ps`, sent in the gaps at `start_ps`: when they
  // are through. What fits in the gaps goes at their share of the wire while the burst waits
  // for credits (each of the burst's TLPs, queued before it, goes first once it has them);
  // while the burst trickles in, it goes at once, and the burst's TLPs that come in meanwhile
  // follow it and catch up in the gaps after (a FIFO): it is through after its symbols. Either
  // way the gaps are taken for as long as it takes at their share. What does not fit goes
  // once the wire is free (`wire_free_ps`) after the burst's last TLP, less what the gaps
  // took of it, and takes all of them.
  uint64_t send(uint64_t start_ps, uint64_t symbols_ps, uint64_t wire_free_ps) {
    const double in_gaps = room(start_ps);
    if (double(symbols_ps) > in_gaps) {
      taken_until_ps = until_ps;
      return std::max(until_ps, wire_free_ps) + symbols_ps - uint64_t(in_gaps);
    }
    taken_until_ps = start_ps + uint64_t(double(symbols_ps) / idle_share + 0.5);
    return credit_paced ? taken_until_ps : start_ps + symbols_ps;
  }

 private:
  static constexpr double min_share = 0.01;
};

}  // namespace p2psim::link
