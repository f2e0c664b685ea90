// A link_channel's burst fidelity rules for cutting a burst short: where a TLP queued in
// another class would go before the rest of its TLPs, as TLP by TLP (docs/architecture.md,
// "Taking turns with other classes").
#include <algorithm>

#include "models/link/link_channel.h"
#include "models/pcie/link_timing.h"
#include "models/pcie/split.h"
#include "models/transport/pcie_port.h"
#include "models/transport/sim_clock.h"
#include "models/transport/tlp_txn.h"

namespace p2psim::link {

using namespace sc_core;

// A burst's mean time on the wire per TLP (its symbols, not its DLLPs).
uint64_t link_channel::tlp_wire_ps(const tlm::tlm_generic_payload& gp) const {
  const auto& h = transport::hdr(gp);
  const auto& m = transport::meta(gp);
  const uint64_t payload = pcie::has_data(h.type) ? h.length : 0;
  return std::max<uint64_t>(
      1, uint64_t((payload + tlp_overhead_bytes(h) * m.tlps) * m_ps_per_wire_byte / m.tlps));
}

// TLP by TLP, an endpoint's requester hands its link a request when the one before it
// starts, so each is younger than everything the link had queued by then, and the arbiter
// (oldest first) sends a TLP queued in another class before it once that TLP is ready. A
// burst of requests stands for such a run of TLPs: it goes up to the first of its TLPs that
// a TLP queued in another class, ready and with its credits by then, would go before; the
// rest waits, younger than what is queued now (start_burst() queues it again). Without this a
// requester's burst of N requests would take the link for N TLPs where its TLPs would have
// taken turns with the other class one by one: a device's reads passed the completions its
// completer had queued (gen-154: 26% more bandwidth than TLP fidelity).
uint32_t link_channel::tlps_before_overtaken(const entry& e, uint64_t at) const {
  const auto& h = transport::hdr(*e.gp);
  const auto& m = transport::meta(*e.gp);
  if (m_order.choices || !m.burst || m.tlps < 2 || !m.unit) return 0;
  // A forwarded burst whose TLPs were all ready at once is older than anything queued since.
  if (!m_requester_feed && m.lag_ps < m.tlps - 1) return 0;
  if (h.type != pcie::tlp_type::mwr && h.type != pcie::tlp_type::mrd) return 0;
  if (pcie::count_requests(h.address, h.length, m.unit) != m.tlps) return 0;
  const int cls = int(pcie::fc_class_of(h.type));
  if (!m_requester_feed) {
    // Forwarded: TLP j (from 0) joined this queue j * lag / (tlps - 1) after the first, as it
    // came into the switch or root complex; TLP by TLP, the first that came in after the
    // other class's TLP was handed over, and would start once that is ready, goes after it.
    // Handed over, not ready: a root complex hands a completion over as it reads memory
    // (ready when the read is done), and a write that comes in meanwhile is younger.
    const uint64_t gap = m.lag_ps / (m.tlps - 1), ser = tlp_wire_ps(*e.gp);
    uint64_t first_waiting = m.tlps;
    for (int c = 0; c < pcie::fc_class_count; ++c) {
      if (c == cls || m_queue[c].empty() || !may_start(m_queue[c].front(), c)) continue;
      const entry& o = m_queue[c].front();
      const uint64_t younger =
          o.queued_ps < e.queued_ps ? 1 : (o.queued_ps - e.queued_ps) / gap + 1;
      const uint64_t after_ready =
          o.ready_ps <= at ? 1 : std::max<uint64_t>(1, (o.ready_ps - at + ser - 1) / ser);
      first_waiting = std::min(first_waiting, std::max(younger, after_ready));
    }
    return first_waiting < m.tlps ? uint32_t(first_waiting) : 0;
  }
  uint64_t soonest = UINT64_MAX;
  for (int c = 0; c < pcie::fc_class_count; ++c)
    if (c != cls && !m_queue[c].empty() && may_start(m_queue[c].front(), c))
      soonest = std::min(soonest, m_queue[c].front().ready_ps);
  if (soonest == UINT64_MAX) return 0;
  // TLP j (from 0) starts j TLP times after `at`; the first after the other is ready waits.
  const uint64_t ser = tlp_wire_ps(*e.gp);
  const uint64_t first_waiting =
      soonest <= at ? 1 : std::max<uint64_t>(1, (soonest - at + ser - 1) / ser);
  return first_waiting < m.tlps ? uint32_t(first_waiting) : 0;
}

// Its first TLPs go now as a new burst (`e` becomes it); the rest, the original transaction,
// is returned to be queued again, with `rest_ready` when its first TLP is ready. An
// endpoint's request burst tells its sender of the departure when its last piece starts; a
// forwarded one tells the switch or root complex now, once.
tlm::tlm_generic_payload* link_channel::cut_burst(entry& e, uint64_t at, uint64_t now,
                                                  uint64_t& rest_ready) {
  const uint32_t k = tlps_before_overtaken(e, at);
  if (!k) return nullptr;
  transport::tlp_txn& orig = transport::txn(*e.gp);
  if (!m_requester_feed && !orig.ext.meta.sender_told) {
    // A switch or root complex frees a burst's ingress buffer when its first TLP leaves,
    // cut or not: told now, while the burst still holds the credits it took there.
    orig.ext.meta.sender_told = true;
    // Its TLPs as they would go back to back: when a root complex's original TLP left.
    orig.ext.meta.span_ps = (orig.ext.meta.tlps - 1) * tlp_wire_ps(orig);
    tell_sender(orig, at, now);
  }
  const uint64_t address = orig.ext.hdr.address, end = address + orig.ext.hdr.length;
  const uint32_t unit = orig.ext.meta.unit, n = orig.ext.meta.tlps;
  const uint64_t cut = std::min(end, (address / unit + 1) * unit + uint64_t(k - 1) * unit);
  const uint64_t lag = orig.ext.meta.lag_ps;
  transport::tlp_txn& head =
      transport::tlp_pool::of(orig).split_burst(orig, k, uint32_t(cut - address));
  // The TLPs become ready evenly over the lag.
  const uint64_t rest_lag = lag * k / (n - 1);
  head.ext.meta.lag_ps = lag * (k - 1) / (n - 1);
  orig.ext.meta.lag_ps = lag - rest_lag;
  rest_ready = e.ready_ps + rest_lag;
  if (m_requester_feed) orig.ext.meta.tell_at_last_start(at);
  e.gp = &head;
  return &orig;
}

uint64_t link_channel::occupy_wire(const tlm::tlm_generic_payload& gp, const wire_use& use,
                                   bool paced, bool in_gaps) {
  uint64_t tlps_end = use.end_ps;
  if (in_gaps)
    tlps_end = std::max(tlps_end, m_gaps.send(use.start_ps, use.tlp_symbols_ps, m_busy_until));
  // The last DLLPs follow the TLPs, or fill the gaps of a burst that trickles in.
  const uint64_t busy_end = std::max(use.start_ps + use.symbols_ps, tlps_end);
  if (in_gaps) {  // the burst it went beside still holds the wire, now to this one's end
    m_busy_until = std::max(m_busy_until, busy_end);
    return tlps_end;
  }
  m_busy_until = busy_end;
  const auto& m = transport::meta(gp);
  m_gaps.until_ps = 0;  // a TLP alone leaves none (start_burst() sees to one not in gaps itself)
  if (m.tlps < 2) return tlps_end;
  m_gaps = burst_gaps::of(use.start_ps, use.first_ps, tlps_end, use.symbols_ps, m.tlps);
  if (m_gaps.until_ps) {
    m_gaps.stream = m.stream;
    m_gaps.cls = int(pcie::fc_class_of(transport::hdr(gp).type));
    m_gaps.credit_paced = paced;
    if (paced) {  // only the ordering check reads these
      m_gaps.header = transport::hdr(gp);
      m_gaps.queued_ps = use.queued_ps;
      m_gaps.in_step_ps = m.lag_ps / (m.tlps - 1);
      m_gaps.tlps = m.tlps;
    }
  }
  return tlps_end;
}

// TLP by TLP, what comes in while a burst's TLPs trickle in goes between them, and what may
// pass a TLP held back by credits goes before it. What goes next (the oldest that has its
// credits and may pass every older one queued) goes in the gaps unless it is queued behind
// the burst's own TLPs: of the burst's stream and class; of its class while the burst waits
// for credits (its TLPs are all queued here then) or on an endpoint's link (its requester's
// jobs take turns: "Ramps"); or one the table forbids to pass them. Nor may it reach the
// receiver before what is on the wire does (an endpoint takes a burst in once all of it is
// there).
bool link_channel::fill_gap(uint64_t now, uint64_t& wake) {
  const burst_gaps& g = m_gaps;
  uint64_t earliest = g.earliest(now);
  if (m_receiver && m_receiver->last_arrival_ps() > m_timing.latency_ps)
    earliest = std::max(earliest, m_receiver->last_arrival_ps() - m_timing.latency_ps);
  if (earliest >= g.until_ps) return false;
  if (earliest > now) {
    wake = earliest;
    return false;
  }
  m_credits.advance(now);
  uint64_t ready = 0;
  const slot s = pick(now, ready);
  if (s.cls < 0) {
    if (ready && ready < g.until_ps) wake = ready;
    return false;
  }
  const entry& e = m_queue[s.cls][s.index];
  const auto& h = transport::hdr(*e.gp);
  const auto& m = transport::meta(*e.gp);
  if (s.cls == g.cls && (g.credit_paced || m_requester_feed || m.stream == g.stream)) return false;
  // Of the burst's class, what does not fit in the gaps before its end would hold its later
  // TLPs back in their queue, which the burst, sent already, cannot show: it waits for the
  // burst. (Let go, on the 16-GPU all-to-all at an eighth of its bytes one GPU's writes fell
  // 4.6% behind TLP fidelity, 1.4% before gaps; tests/cli/burst_fidelity_test.cpp.)
  if (s.cls == g.cls && double(tlp_wire_ps(*e.gp)) * m.tlps > g.room(now)) return false;
  // What may not pass the burst's TLPs waits for those handed over before it, as TLP by TLP,
  // the last of them through; if that is all of them, for the burst. (An endpoint's requester
  // hands over a request when the one before it starts: TLP by TLP one of the burst's TLPs is
  // queued here at a time, and what may not pass it goes right after it.)
  if (g.credit_paced && !m_requester_feed &&
      m_order.rules.may_pass(h, g.header) == pcie::passing::no) {
    const uint32_t ahead = g.handed_over_by(e.queued_ps);
    if (ahead >= g.tlps) return false;
    if (const uint64_t after = ahead ? g.through(ahead - 1) : 0; after > now) {
      if (after < g.until_ps) wake = after;
      return false;
    }
  }
  entry started = e;
  m_queue[s.cls].pop_front();
  start(started, now, now, true);
  return true;
}

}  // namespace p2psim::link
