#include "models/pcie/credit_demand.h"

#include <algorithm>

namespace p2psim::pcie {

credit_need credit_demand::in_window(const run& r, uint64_t t, uint64_t loop) {
  if (r.first_ps > t || r.last_ps + loop <= t) return {};
  uint32_t n = r.tlps;
  if (r.tlps > 1) {
    // TLP k starts at first + k * step, step = (last - first) / (tlps - 1).
    const double step = double(r.last_ps - r.first_ps) / double(r.tlps - 1);
    const double from = t >= loop ? double(t - loop) : -1.0;  // starts after this count
    const double to = double(t);
    const auto k_max = std::min<int64_t>(
        r.tlps - 1, step > 0 ? int64_t((to - r.first_ps) / step) : int64_t(r.tlps - 1));
    int64_t k_min = 0;
    if (from >= double(r.first_ps))
      k_min = step > 0 ? int64_t((from - r.first_ps) / step) + 1 : int64_t(r.tlps);
    n = k_max >= k_min ? uint32_t(k_max - k_min + 1) : 0;
  }
  const auto data = uint32_t((uint64_t(r.data_credits) * n + r.tlps - 1) / r.tlps);
  return {n, data};
}

void credit_demand::measure(uint64_t t, uint64_t loop) {
  credit_need sum;
  for (const run& r : m_recent) {
    const credit_need c = in_window(r, t, loop);
    sum.header += c.header;
    sum.data += c.data;
  }
  m_most.header = std::max(m_most.header, sum.header);
  m_most.data = std::max(m_most.data, sum.data);
}

void credit_demand::sent(uint64_t first_ps, uint64_t last_ps, uint32_t tlps, uint32_t data_credits,
                         uint64_t tlp_ps) {
  if (tlps == 0) return;
  const uint64_t loop = m_loop.of(tlp_ps);
  m_longest_loop_ps = std::max(m_longest_loop_ps, loop);
  // Runs whose last TLP left a loop before this one starts hold nothing any more.
  auto kept = m_recent.begin();
  for (auto it = m_recent.begin(); it != m_recent.end(); ++it)
    if (it->last_ps + loop > first_ps) *kept++ = *it;
  m_recent.erase(kept, m_recent.end());
  m_recent.push_back({first_ps, last_ps, tlps, data_credits});
  measure(first_ps, loop);
  if (last_ps != first_ps) measure(last_ps, loop);
}

}  // namespace p2psim::pcie
