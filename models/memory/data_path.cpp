#include "models/memory/data_path.h"

#include <algorithm>

namespace p2psim::memory {

uint64_t data_path::serve(uint64_t from_ps, uint64_t bytes, uint64_t settled_ps) {
  // Bookings are sorted and disjoint, so their ends are sorted too.
  auto ends_by = [&](uint64_t t) {
    return std::partition_point(m_busy.begin(), m_busy.end(),
                                [&](const interval& b) { return b.end <= t; });
  };
  if (!m_busy.empty() && m_busy.front().end <= settled_ps)
    m_busy.erase(m_busy.begin(), ends_by(settled_ps));
  uint64_t t = from_ps, left = time_for(bytes);
  if (m_busy.empty() || t >= m_busy.back().end) {  // after every booking: most requests
    if (!left) return t;
    if (!m_busy.empty() && m_busy.back().end == t)
      m_busy.back().end += left;
    else
      m_busy.push_back({t, t + left});
    return t + left;
  }
  size_t i = size_t(ends_by(t) - m_busy.begin());  // after the bookings over by `from_ps`
  if (i < m_busy.size() && m_busy[i].start <= t) t = m_busy[i++].end;  // inside one: after it
  while (left) {
    // [t, gap_end) is free; booking i (if any) starts at gap_end.
    const uint64_t gap_end = i < m_busy.size() ? m_busy[i].start : UINT64_MAX;
    const uint64_t take = std::min(left, gap_end - t);
    if (i > 0 && m_busy[i - 1].end == t)
      m_busy[i - 1].end += take;
    else
      m_busy.insert(m_busy.begin() + long(i++), {t, t + take});
    t += take;
    left -= take;
    if (i < m_busy.size() && m_busy[i].start == t) {  // the gap is full: one booking
      m_busy[i - 1].end = m_busy[i].end;
      m_busy.erase(m_busy.begin() + long(i));
      if (left) t = m_busy[i - 1].end;
    }
  }
  return t;
}

}  // namespace p2psim::memory
