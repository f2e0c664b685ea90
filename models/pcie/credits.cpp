#include "models/pcie/credits.h"

#include <algorithm>

namespace p2psim::pcie {

credit_gate::credit_gate(const credit_limits& l) : m_limits(l) {
  auto set = [&](fc_class c, uint32_t hdr, uint32_t data) {
    pool& p = m_avail[int(c)];
    p.header = hdr;
    p.data = data;
    p.inf_header = hdr == 0;
    p.inf_data = data == 0;
  };
  set(fc_class::posted, l.ph, l.pd);
  set(fc_class::non_posted, l.nph, l.npd);
  set(fc_class::completion, l.cplh, l.cpld);
}

void credit_gate::absorb(time_ps now) {
  while (!m_pending.empty() && m_pending.front().arrival <= now) {
    const pending_return& r = m_pending.front();
    pool& p = m_avail[int(r.cls)];
    p.header += r.cost.header;
    p.data += r.cost.data;
    m_pending.pop_front();
  }
  while (!m_spread.empty() && m_spread.front().all.arrival <= now) {
    spread_return r = m_spread.front();
    m_spread.pop_front();
    pool& p = m_avail[int(r.all.cls)];
    const uint32_t left = r.tlps - r.done;
    const uint32_t k =
        r.step ? uint32_t(std::min<time_ps>(left, (now - r.all.arrival) / r.step + 1)) : left;
    const credit_cost got = still_to_come(r, k);
    p.header += got.header;
    p.data += got.data;
    if (k == left) continue;
    r.done += k;
    r.all.arrival += k * r.step;
    insert(r);
  }
  m_next_arrival = std::min(m_pending.empty() ? no_return : m_pending.front().arrival,
                            m_spread.empty() ? no_return : m_spread.front().all.arrival);
}

credit_cost credit_gate::first_of(const spread_return& r, uint32_t k) {
  return {uint32_t(uint64_t(r.all.cost.header) * k / r.tlps),
          uint32_t(uint64_t(r.all.cost.data) * k / r.tlps)};
}

credit_cost credit_gate::still_to_come(const spread_return& r, uint32_t k) {
  const credit_cost to = first_of(r, r.done + k), had = first_of(r, r.done);
  return {to.header - had.header, to.data - had.data};
}

bool credit_gate::two_fit(fc_class c, credit_cost cost) const {
  const pool& p = m_avail[int(c)];
  const credit_balance limit = limits_of(c);
  return (p.inf_header || 2 * uint64_t(cost.header) <= uint64_t(limit.header)) &&
         (p.inf_data || 2 * uint64_t(cost.data) <= uint64_t(limit.data));
}

bool credit_gate::can_start_burst(fc_class c, credit_cost cost) const {
  const pool& p = m_avail[int(c)];
  const bool within_one_burst =
      (p.inf_header || p.header + cost.header > 0) && (p.inf_data || p.data + cost.data > 0);
  // Two such bursts fit the advertised buffer: the sender keeps two in flight without going
  // beyond it (a receiver that frees a burst only once all of it is in still gets the next
  // while it does), so the burst starts as its first TLP would, once that has its credits.
  if (two_fit(c, cost) || cost.header <= 1) {  // a burst of one TLP is that TLP
    const uint32_t tlps = std::max(1u, cost.header);
    if (can_send(c, credit_cost{1, (cost.data + tlps - 1) / tlps})) return true;
    // But after a larger burst, which ran ahead of its credits (below), into a receiver that
    // frees a burst only once all of it is in, the pool is short by that burst's credits,
    // which TLP by TLP come back one by one as its TLPs come in (a switch or root complex
    // frees a burst TLP by TLP as they leave): the burst after it takes the same slack (seed
    // 3577: a 32-TLP burst after 64-TLP ones into 64 header credits waited for the last
    // one's whole return, 34 ns, where TLP by TLP its first TLP found credits).
    return m_frees_whole && p.after_large_burst && cost.header > 1 && within_one_burst;
  }
  return within_one_burst;
}

void credit_gate::schedule_return(fc_class c, credit_cost cost, time_ps arrival) {
  insert(pending_return{arrival, cost, c});
}

void credit_gate::schedule_return_spread(fc_class c, credit_cost cost, time_ps arrival,
                                         uint32_t tlps, time_ps span) {
  if (tlps < 2 || !span) return insert(pending_return{arrival, cost, c});
  insert(spread_return{{arrival, cost, c}, tlps, 0, span / (tlps - 1)});
}

bool credit_gate::counted(pending_return& r) const {
  const pool& p = m_avail[int(r.cls)];
  if (p.inf_header) r.cost.header = 0;
  if (p.inf_data) r.cost.data = 0;
  return !(p.inf_header && p.inf_data);
}

void credit_gate::insert(pending_return r) {
  if (!counted(r)) return;
  m_next_arrival = std::min(m_next_arrival, r.arrival);
  m_pending.insert_sorted(r, [](const pending_return& x) { return x.arrival; });
}

void credit_gate::insert(spread_return r) {
  if (!counted(r.all)) return;
  m_next_arrival = std::min(m_next_arrival, r.all.arrival);
  m_spread.insert_sorted(r, [](const spread_return& x) { return x.all.arrival; });
}

credit_balance credit_gate::limits_of(fc_class c) const {
  switch (c) {
    case fc_class::posted:
      return {m_limits.ph, m_limits.pd};
    case fc_class::non_posted:
      return {m_limits.nph, m_limits.npd};
    default:
      return {m_limits.cplh, m_limits.cpld};
  }
}

credit_balance credit_gate::outstanding(fc_class c) const {
  const pool& p = m_avail[int(c)];
  credit_balance b = limits_of(c);
  b.header = p.inf_header ? 0 : b.header - p.header;
  b.data = p.inf_data ? 0 : b.data - p.data;
  for (const pending_return& r : m_pending)
    if (r.cls == c) {
      b.header -= r.cost.header;
      b.data -= r.cost.data;
    }
  for (const spread_return& r : m_spread)
    if (r.all.cls == c) {
      const credit_cost rest = still_to_come(r, r.tlps - r.done);
      b.header -= rest.header;
      b.data -= rest.data;
    }
  return b;
}

bool credit_gate::infinite(fc_class c) const {
  const pool& p = m_avail[int(c)];
  return p.inf_header && p.inf_data;
}

}  // namespace p2psim::pcie
