#include "models/pcie/credits.h"

#include <algorithm>
#include <iterator>

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
}

bool credit_gate::can_start_burst(fc_class c, credit_cost cost) const {
  const pool& p = m_avail[int(c)];
  const credit_balance limit = limits_of(c);
  // Two such bursts fit the advertised buffer: the sender keeps two in flight without going
  // beyond it (a receiver that frees a burst only once all of it is in still gets the next
  // while it does), so the burst starts as its first TLP would, once that has its credits.
  const bool two_fit = (p.inf_header || 2 * uint64_t(cost.header) <= uint64_t(limit.header)) &&
                       (p.inf_data || 2 * uint64_t(cost.data) <= uint64_t(limit.data));
  if (two_fit || cost.header <= 1) {  // a burst of one TLP is that TLP
    const uint32_t tlps = std::max(1u, cost.header);
    return can_send(c, credit_cost{1, (cost.data + tlps - 1) / tlps});
  }
  return (p.inf_header || p.header + cost.header > 0) && (p.inf_data || p.data + cost.data > 0);
}

void credit_gate::consume(fc_class c, credit_cost cost) {
  pool& p = m_avail[int(c)];
  if (!p.inf_header) p.header -= cost.header;
  if (!p.inf_data) p.data -= cost.data;
}

void credit_gate::schedule_return(fc_class c, credit_cost cost, time_ps arrival) {
  const pool& p = m_avail[int(c)];
  if (p.inf_header && p.inf_data) return;
  if (p.inf_header) cost.header = 0;
  if (p.inf_data) cost.data = 0;
  if (m_pending.empty() || m_pending.back().arrival <= arrival) {
    m_pending.push_back({arrival, c, cost});
    return;
  }
  auto at = m_pending.end();
  while (at != m_pending.begin() && std::prev(at)->arrival > arrival) --at;
  m_pending.insert(at, {arrival, c, cost});
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
  return b;
}

bool credit_gate::infinite(fc_class c) const {
  const pool& p = m_avail[int(c)];
  return p.inf_header && p.inf_data;
}

}  // namespace p2psim::pcie
