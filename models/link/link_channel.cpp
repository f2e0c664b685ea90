#include "models/link/link_channel.h"

#include <algorithm>
#include <stdexcept>

#include "models/link/dllps_due.h"
#include "models/pcie/link_timing.h"
#include "models/pcie/order_policy.h"
#include "models/pcie/split.h"
#include "models/transport/activity.h"
#include "models/transport/pcie_port.h"
#include "models/transport/sim_clock.h"
#include "models/transport/stream_log.h"
#include "models/transport/tlp_txn.h"

namespace p2psim::link {

using namespace sc_core;

link_channel::link_channel(sc_module_name name, const channel_timing& timing,
                           const pcie::credit_limits& receiver_credits,
                           const pcie::order_policy& order)
    : sc_module(name),
      in("in"),
      out("out"),
      m_timing(timing),
      m_order(order),
      m_ps_per_wire_byte(timing.ps_per_byte /
                         (1.0 - (timing.skip_ordered_sets ? pcie::skip_fraction : 0.0))),
      m_receiver_credits(receiver_credits),
      m_credits(receiver_credits) {
  in.bind(static_cast<transport::hop_forward&>(*this));
  out.bind(static_cast<transport::hop_backward&>(*this));
  SC_HAS_PROCESS(link_channel);
  SC_METHOD(woken);
  sensitive << m_wake;
  dont_initialize();
}

void link_channel::pace_bursts_by_credits(const receiver_hold& hold) {
  const uint64_t two_way = 2 * m_timing.latency_ps;
  m_demand.assign(pcie::fc_class_count,
                  pcie::credit_demand({two_way, hold.usual_ps, hold.from_tail}));
  const pcie::credit_loop least{two_way, hold.least_ps, hold.from_tail};
  const pcie::credit_limits& l = m_receiver_credits;
  m_windows = {pcie::credit_window(l.ph, l.pd, least), pcie::credit_window(l.nph, l.npd, least),
               pcie::credit_window(l.cplh, l.cpld, least)};
}

void link_channel::set_sender(const transport::pcie_port& sender) {
  m_sender = sender.owner_allows_start_ahead() ? &sender : nullptr;
  m_requester_feed = !sender.owner_forwards_bursts();
}

void link_channel::set_receiver(const transport::pcie_port& receiver) {
  m_receiver = &receiver;
  m_credits.set_receiver_frees_bursts_whole(!receiver.owner_forwards_bursts());
}

uint64_t link_channel::serialization_ps(const pcie::tlp_header& h) const {
  uint32_t payload = pcie::has_data(h.type) ? h.length : 0;
  uint64_t bytes = m_timing.pcie_framing ? pcie::wire_bytes(h) : payload + m_timing.packet_overhead;
  if (m_timing.ecrc && m_timing.pcie_framing && !h.ecrc) bytes += 4;
  return uint64_t(bytes * m_ps_per_wire_byte + 0.5);
}

tlm::tlm_sync_enum link_channel::nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase&,
                                                 sc_time& d) {
  if (down()) {
    drop(gp);
    return tlm::TLM_ACCEPTED;
  }
  uint64_t now = transport::now_ps();
  uint64_t ready = now + transport::to_ps(d);
  if (ready < m_promised_ps)  // a TLP started ahead of this one on the sender's word
    throw std::logic_error(std::string(name()) + ": a TLP handed over ready at " +
                           std::to_string(ready) + " ps, before " + std::to_string(m_promised_ps) +
                           " ps: its sender promised none would be");
  auto c = int(pcie::fc_class_of(transport::hdr(gp).type));
  m_queue[c].push_back(make_entry(gp, ready, now));
  uint64_t depth = m_queue[0].size() + m_queue[1].size() + m_queue[2].size();
  if (!m_started_ahead.empty()) depth += settle_started_ahead(now);
  m_stats.max_queue_tlps = std::max(m_stats.max_queue_tlps, depth);
  if (!m_pumping) pump();
  return tlm::TLM_ACCEPTED;
}

tlm::tlm_sync_enum link_channel::nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase&,
                                                 sc_time& d) {
  // The receiver freed the buffer: its UpdateFC reaches us one propagation latency later.
  const auto& h = transport::hdr(gp);
  uint64_t arrival = transport::now_ps() + transport::to_ps(d) + m_timing.latency_ps;
  auto& m = transport::meta(gp);
  m_credits.schedule_return_spread(pcie::fc_class_of(h.type), credit_cost_of(gp), arrival, m.tlps,
                                   m.frees_over_ps);
  m.frees_over_ps = 0;
  if (!m_pumping) pump();
  return tlm::TLM_ACCEPTED;
}

// A burst's credits: a header credit for each of its TLPs and the payload's data credits.
pcie::credit_cost link_channel::credit_cost_of(const tlm::tlm_generic_payload& gp) {
  pcie::credit_cost c = pcie::credit_cost_of(transport::hdr(gp));
  c.header = transport::meta(gp).tlps;
  return c;
}

link_channel::entry link_channel::make_entry(tlm::tlm_generic_payload& gp, uint64_t ready_ps,
                                             uint64_t queued_ps) {
  return {&gp, ready_ps, m_seq++, queued_ps, credit_cost_of(gp)};
}

// The oldest ready head that has credits and may pass every older head still waiting.
link_channel::slot link_channel::pick(uint64_t now, uint64_t& wake) {
  if (pcie::choice_source* choices = m_order.choices) return pick_explored(now, wake, *choices);
  int heads[pcie::fc_class_count];  // classes with a queued TLP, their heads oldest first
  int n = 0;
  for (int c = 0; c < pcie::fc_class_count; ++c)
    if (!m_queue[c].empty()) heads[n++] = c;
  auto head = [&](int i) -> const entry& { return m_queue[heads[i]].front(); };
  for (int i = 1; i < n; ++i)  // at most three heads: order them by age
    for (int j = i; j > 0 && head(j).seq < head(j - 1).seq; --j) std::swap(heads[j], heads[j - 1]);
  for (int i = 0; i < n; ++i) {
    const entry& e = head(i);
    if (e.ready_ps > now) {  // still inside the sender's pipeline: not here yet
      wake = wake ? std::min(wake, e.ready_ps) : e.ready_ps;
      continue;
    }
    bool passes = true;
    for (int j = 0; j < i && passes; ++j)
      if (head(j).ready_ps <= now &&
          m_order.rules.may_pass(transport::hdr(*e.gp), transport::hdr(*head(j).gp)) ==
              pcie::passing::no)
        passes = false;
    if (!passes) continue;
    if (may_start(e, heads[i])) return {heads[i], 0};
    if (uint64_t r = m_credits.next_return()) wake = wake ? std::min(wake, r) : r;
  }
  return {};
}

// With a choice source: any of the first queued TLPs (not only class heads) may go, if it has
// credits and the ordering table lets it pass every older TLP that has arrived; where more
// than one may, the source decides (the table's Y/N cases become observable).
link_channel::slot link_channel::pick_explored(uint64_t now, uint64_t& wake,
                                               pcie::choice_source& choices) {
  constexpr size_t window = 16;  // how deep an egress queue is searched
  slot order[window];
  size_t n = 0, next[pcie::fc_class_count] = {0, 0, 0};
  while (n < window) {  // merge the class queues back into arrival order
    int best = -1;
    for (int c = 0; c < pcie::fc_class_count; ++c)
      if (next[c] < m_queue[c].size() &&
          (best < 0 || m_queue[c][next[c]].seq < m_queue[best][next[best]].seq))
        best = c;
    if (best < 0) break;
    order[n++] = {best, next[best]++};
  }
  slot eligible[window];
  size_t m = 0;
  for (size_t i = 0; i < n; ++i) {
    const entry& e = m_queue[order[i].cls][order[i].index];
    if (e.ready_ps > now) {  // still in the sender's pipeline: not here yet
      wake = wake ? std::min(wake, e.ready_ps) : e.ready_ps;
      continue;
    }
    const auto& h = transport::hdr(*e.gp);
    bool passes = true;
    for (size_t j = 0; j < i && passes; ++j) {
      const entry& older = m_queue[order[j].cls][order[j].index];
      passes = older.ready_ps > now ||
               m_order.rules.may_pass(h, transport::hdr(*older.gp)) != pcie::passing::no;
    }
    if (!passes) continue;
    if (!may_start(e, order[i].cls)) {
      if (uint64_t r = m_credits.next_return()) wake = wake ? std::min(wake, r) : r;
      continue;
    }
    eligible[m++] = order[i];
  }
  if (m == 0) return {};
  return eligible[m == 1 ? 0 : choices.pick(m)];
}

void link_channel::count(channel_stats& s, const start_counts& c) {
  s.tlps += c.tlps;
  s.relaxed_ordering_tlps += c.relaxed_ordering_tlps;
  s.payload_bytes += c.payload_bytes;
  s.wire_bytes += c.wire_bytes;
  s.dllps += c.dllps;
  s.busy_ps += c.busy_ps;
  s.credit_stalls += c.credit_stall;
}

size_t link_channel::settle_started_ahead(uint64_t now) {
  for (; !m_started_ahead.empty() && m_started_ahead.front().start_ps <= now;
       m_started_ahead.pop_front())
    count(m_stats, m_started_ahead.front().counts);
  return m_started_ahead.size();
}

channel_stats link_channel::stats() const {
  channel_stats s = m_stats;
  const uint64_t now = transport::now_ps();
  for (const started_ahead& a : m_started_ahead) {
    if (a.start_ps > now) break;  // by start time: the rest start later still
    count(s, a.counts);
  }
  return s;
}

// One TLP (every TLP at TLP fidelity): start() without what only a burst needs, or a wire
// paced by credits. The same arithmetic for one TLP, in a third of the instructions; it runs
// for every TLP on every link.
void link_channel::start_tlp(const entry& e, uint64_t at, uint64_t now) {
  auto& gp = *e.gp;
  const auto& h = transport::hdr(gp);
  auto& m = transport::meta(gp);
  const auto cls = pcie::fc_class_of(h.type);
  start_counts counts;
  counts.credit_stall = at > std::max(e.ready_ps, m_busy_until);
  const bool ran_ahead_before = m.ran_ahead_of_credits;
  m_credits.consume(cls, e.cost);
  const uint64_t payload = pcie::has_data(h.type) ? h.length : 0;
  const uint64_t tlp_bytes = payload + tlp_overhead_bytes(h);
  const uint64_t dllps_due = dllps_due_for(m_ack_time, m_fc_time, tlp_bytes, m_timing);
  const uint64_t bytes = tlp_bytes + dllps_due * pcie::dllp_bytes;
  const uint64_t ser = uint64_t(bytes * m_ps_per_wire_byte + 0.5);
  const uint64_t tlp_ser = uint64_t(tlp_bytes * m_ps_per_wire_byte + 0.5);
  const uint64_t end = std::max(at, e.ready_ps + m.lag_ps) + tlp_ser;
  m_busy_until = std::max(at + ser, end);
  m_gaps.until_ps = 0;
  m_holds.started(m.stream, 1, e.ready_ps, at, end, ser, int(cls), ran_ahead_before);
  m.last_ser_ps = m.tail_ser_ps = tlp_ser;
  m.lag_ps = end - (at + tlp_ser);
  m.span_ps = end - std::min(end - at, tlp_ser) - at;
  counts.tlps = 1;
  counts.relaxed_ordering_tlps = h.attrs.relaxed_ordering;
  counts.payload_bytes = payload;
  counts.wire_bytes = bytes;
  counts.dllps = dllps_due;
  counts.busy_ps = ser;
  if (at > now)
    m_started_ahead.push_back({at, counts});  // counted when it starts
  else
    count(m_stats, counts);
  tlm::tlm_phase fw = tlm::BEGIN_REQ;
  sc_time arrive = transport::ps(at - now + tlp_ser + m_timing.latency_ps);
  out->nb_transport_fw(gp, fw, arrive);
  if (m.sender_told) {  // the last piece of a forwarded burst cut to one TLP
    m.sender_told = false;
    return;
  }
  tell_sender(gp, at, now);
}

void link_channel::start_burst(entry e, uint64_t at, uint64_t now, bool in_gaps) {
  // A burst cut short: its first TLPs go now, the rest is queued again (below).
  uint64_t rest_ready = 0;
  const uint64_t queued = e.queued_ps, ready = e.ready_ps;
  tlm::tlm_generic_payload* rest = e.cost.header > 1 ? cut_burst(e, at, now, rest_ready) : nullptr;
  const uint64_t rest_queued = queued + (rest_ready - ready);  // its first came in later
  auto& gp = *e.gp;
  auto& h = transport::hdr(gp);
  const auto& m = transport::meta(gp);
  start_counts counts;
  // Ready, the serializer free, and still it did not go: the receiver had no room for it
  // (or for an older TLP it may not pass).
  counts.credit_stall = at > std::max(e.ready_ps, m_busy_until);
  const auto cls = pcie::fc_class_of(h.type);
  const pcie::credit_cost cost = rest ? credit_cost_of(gp) : e.cost;  // a piece: its own
  auto& mm = transport::meta(gp);
  // What a transmission held behind this burst counts: whether it ran ahead of its credits on
  // a link before this one. On its first link that is how its sender's jobs take turns, a
  // class of its own (docs/architecture.md, "Ramps").
  const bool ran_ahead_before = mm.ran_ahead_of_credits;
  if (cost.header > 1 && !m_credits.can_send(cls, cost)) mm.ran_ahead_of_credits = true;
  m_credits.consume(cls, cost);
  const uint64_t payload = pcie::has_data(h.type) ? h.length : 0;
  const uint64_t per_tlp = tlp_overhead_bytes(h);
  // A burst pays every one of its TLPs' framing, header and digest.
  const uint64_t tlp_bytes = payload + per_tlp * m.tlps;
  // A burst's first and last TLPs are the size of the rest unless the transfer starts or
  // ends unaligned: a 65 B read's completions are 64 B and 1 B, and taking each as 32.5 B
  // let the first arrive early at every hop.
  auto own_size = [&](uint32_t bytes) {
    return mm.tlps > 1 && payload && bytes && uint64_t(bytes) * mm.tlps != payload;
  };
  // TLP by TLP a TLP's DLLPs go right after it: those due before a burst's last TLP delay
  // its start (and its sender's next hand-over); the rest follow it. Spread evenly, a
  // burst's last TLP started up to a DLLP late
  // (tests/data/generated/burst_dllps_before_the_last_tlp).
  uint64_t head_dllps = 0;
  if (m.tlps > 1) {
    uint64_t ack = m_ack_time, fc = m_fc_time;
    const uint64_t last_bytes =
        own_size(mm.last_bytes) ? mm.last_bytes + per_tlp : tlp_bytes / m.tlps;
    head_dllps = dllps_due_for(ack, fc, tlp_bytes - last_bytes, m_timing);
  }
  const uint64_t dllps_due = dllps_due_for(m_ack_time, m_fc_time, tlp_bytes, m_timing);
  const uint64_t bytes = tlp_bytes + dllps_due * pcie::dllp_bytes;
  uint64_t ser = uint64_t(bytes * m_ps_per_wire_byte + 0.5);
  uint64_t tlp_ser = uint64_t(tlp_bytes * m_ps_per_wire_byte + 0.5);
  // A burst's first TLP arrives after its own serialization time. Its DLLPs go between its
  // TLPs, as they would TLP by TLP, so its last TLP is through once the TLPs and the DLLPs
  // due before it are (through_ser); and it cannot leave before it is ready here (lag_ps
  // after the first), so the burst may take longer than its symbols do. For a TLP (one TLP,
  // no lag) this is just its serialization time.
  const uint64_t mean_ser = mm.tlps > 1 ? tlp_ser / mm.tlps : tlp_ser;
  auto end_ser = [&](uint32_t bytes) {
    if (!own_size(bytes)) return mean_ser;
    return uint64_t((bytes + per_tlp) * m_ps_per_wire_byte + 0.5);
  };
  const uint64_t first_ser = end_ser(mm.first_bytes), last_ser = end_ser(mm.last_bytes);
  // The last TLP is through once every TLP and the DLLPs due before it are.
  const uint64_t through_ser =
      tlp_ser + uint64_t(head_dllps * pcie::dllp_bytes * m_ps_per_wire_byte + 0.5);
  // The lag runs from when the first TLP was ready here, not from when the burst starts: a
  // burst that waited in the queue has had its TLPs come in meanwhile. Counted from its
  // start, a 64 KiB burst forwarded from a Gen3 x4 link onto a Gen3 x8 one held the wire for
  // the x4 time again after waiting, and two such writers into one GPU got half of TLP
  // fidelity's bandwidth (tests/data/generated/burst_lag_elapsed_in_queue.yaml).
  uint64_t tlps_end = std::max(at + through_ser, std::max(at, e.ready_ps + mm.lag_ps) + last_ser);
  // The pieces of a re-emitted TLP come in together: once the first of them is in, they go
  // one after another (spread evenly over the lag, only the last would have been left).
  if (mm.tail_tlps > 1 && mm.tail_tlps < mm.tlps) {
    const uint64_t tail_in = e.ready_ps + mm.lag_ps - std::min(mm.lag_ps, mm.tail_spread_ps);
    tlps_end = std::max(tlps_end, std::max(at, tail_in) + (mm.tail_tlps - 1) * mean_ser + last_ser);
    mm.tail_spread_ps = std::max(mm.tail_spread_ps, (mm.tail_tlps - 1) * mean_ser);
  }
  const uint64_t arrived_end = tlps_end;
  // Nor sooner than the receiver's credits let its TLPs start (credit_window.h).
  if (!m_windows.empty())
    if (pcie::credit_window& w = m_windows[size_t(cls)]; w.limits()) {
      const uint64_t hold = m_receiver ? m_receiver->owner_least_hold_ps(gp) : 0;
      // Its TLPs start evenly from the first to the last (whose start the DLLPs due before
      // it delay).
      const uint64_t spacing = mm.tlps > 1 ? (through_ser - last_ser) / (mm.tlps - 1) : ser;
      tlps_end = std::max(tlps_end, w.place(at, mm.tlps, cost.data, spacing, e.ready_ps, mm.lag_ps,
                                            mean_ser, hold) +
                                        last_ser);
    }
  if (in_gaps || mm.tlps > 1) {
    tlps_end = occupy_wire(gp, {at, at + first_ser, tlps_end, through_ser, ser, queued},
                           tlps_end > arrived_end, in_gaps);
  } else {  // a TLP alone holds the wire for its symbols (DLLPs included) and leaves no gaps
    m_busy_until = std::max(at + ser, tlps_end);
    m_gaps.until_ps = 0;
  }
  m_holds.started(m.stream, m.tlps, e.ready_ps, at, tlps_end, ser, int(cls), ran_ahead_before);
  mm.last_ser_ps = first_ser;
  mm.tail_ser_ps = last_ser;
  mm.lag_ps = tlps_end - (at + first_ser);
  mm.span_ps = tlps_end - std::min(tlps_end - at, last_ser) - at;
  counts.tlps = m.tlps;
  counts.relaxed_ordering_tlps = h.attrs.relaxed_ordering ? m.tlps : 0;
  counts.payload_bytes = payload;
  counts.wire_bytes = bytes;
  counts.dllps = dllps_due;
  counts.busy_ps = ser;
  if (!m_demand.empty())
    m_demand[size_t(cls)].sent(at, tlps_end - first_ser, m.tlps, cost.data, first_ser);
  if (at > now)
    m_started_ahead.push_back({at, counts});  // counted when it starts
  else
    count(m_stats, counts);

  if (rest) {  // younger than everything queued now; its class's first still
    auto& q = m_queue[int(cls)];
    q.insert(q.begin(), make_entry(*rest, std::max(rest_ready, m_busy_until), rest_queued));
  }
  // The TLP's tail arrives when its own symbols are through (DLLPs follow it).
  tlm::tlm_phase fw = tlm::BEGIN_REQ;
  sc_time arrive = transport::ps(at - now + first_ser + m_timing.latency_ps);
  out->nb_transport_fw(gp, fw, arrive);
  if (rest) return;      // the sender learns of the departure when the last piece starts
  if (mm.sender_told) {  // a forwarded burst's last piece: its sender knows already
    mm.sender_told = false;
    return;
  }
  if (m_requester_feed && m.tlps > 1 && mm.span_ps && !pcie::is_completion(h.type)) {
    // TLP by TLP, an endpoint hands over its next request when the one before it starts: for
    // a burst, when its last TLP does. Told at its first, a requester handed over its next
    // burst a whole burst early, older than what other jobs handed over meanwhile (seed 285).
    mm.tell_at_last_start(at);
    gp.acquire();  // the receiver may free it before then
    m_departures.push_back({at + mm.span_ps, &gp});
    wake_at(at + mm.span_ps, now);
    return;
  }
  tell_sender(gp, at, now);
}

void link_channel::tell_sender(tlm::tlm_generic_payload& gp, uint64_t at, uint64_t now) {
  auto& m = transport::meta(gp);
  // A switch or root complex that frees the burst's buffer now frees it TLP by TLP, over the
  // burst's span here.
  if (!m_requester_feed) m.frees_over_ps = m.span_ps;
  tlm::tlm_phase bw = tlm::END_REQ;
  sc_time leaves = transport::ps(at - now);
  in->nb_transport_bw(gp, bw, leaves);
  m.frees_over_ps = 0;  // one that frees it later, or an endpoint downstream, frees it whole
}

void link_channel::tell_departures(uint64_t up_to) {
  while (!m_departures.empty() && m_departures.front().at_ps <= up_to) {
    tlm::tlm_generic_payload& gp = *m_departures.front().gp;
    m_departures.pop_front();
    tlm::tlm_phase bw = tlm::END_REQ;
    sc_time zero = SC_ZERO_TIME;
    in->nb_transport_bw(gp, bw, zero);
    gp.release();
  }
}

void link_channel::wake_at(uint64_t t, uint64_t now) {
  if (m_wake_at <= t) return;  // a wake no later than t is already pending
  m_wake_at = std::max(t, now);
  m_wake.notify(transport::ps(m_wake_at - now));
}

void link_channel::woken() {
  transport::note_activity(this);
  m_wake_at = no_wake;  // the pending wake fired: none is known now
  const uint64_t now = transport::now_ps();
  tell_departures(now);
  pump();
  if (!m_departures.empty()) wake_at(m_departures.front().at_ps, now);
}

void link_channel::pump() {
  m_pumping = true;
  uint64_t now = transport::now_ps();
  while (true) {
    if (m_queue[0].empty() && m_queue[1].empty() && m_queue[2].empty()) break;
    if (m_busy_until > now) {
      if (m_gaps.until_ps > now && !m_order.choices) {  // a burst's gaps: burst fidelity
        uint64_t wake = no_wake;
        if (fill_gap(now, wake)) continue;
        wake_at(std::min(wake, m_busy_until), now);
        break;
      }
      if (start_ahead(now)) continue;
      // A wake no later than the serializer frees is pending already: nothing can start
      // before then, so it is the one that matters.
      if (m_wake_at > m_busy_until)
        if (uint64_t t = next_chance(); t != no_wake) wake_at(t, now);
      break;
    }
    m_credits.advance(now);
    uint64_t wake = 0;
    slot s = pick(now, wake);
    if (s.cls < 0) {
      if (start_ahead(now)) continue;
      if (wake) wake_at(wake, now);
      break;
    }
    start(take(s.cls, s.index), now, now);
  }
  m_pumping = false;
}

}  // namespace p2psim::link
