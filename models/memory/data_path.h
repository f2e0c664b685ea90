// A memory's data path, booked ahead: a read takes it once its access latency is over, a write
// as it comes in, so requests book it out of the order they come in. Each request takes the
// earliest free time from when it may start, in pieces around the bookings made before it:
// the bytes of a write go between those of reads booked earlier. (Served one after another in
// the order they came, as `throughput` serves, a write that came in during a read's access
// latency waited for that read's bytes, every write after it too: generated seed 2452.)
// Pure timing arithmetic in picoseconds.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace p2psim::memory {

class data_path {
 public:
  data_path() = default;
  // gbs: GB/s (1e9 bytes/s); 0 = unlimited.
  explicit data_path(double gbs) : m_ps_per_byte(gbs > 0 ? 1000.0 / gbs : 0) {}
  uint64_t time_for(uint64_t bytes) const { return uint64_t(bytes * m_ps_per_byte + 0.5); }

  // Books `bytes` from `from_ps` on; returns when the last of them is through. No later
  // request starts before `settled_ps` (the simulated time now): bookings over by then are
  // forgotten.
  uint64_t serve(uint64_t from_ps, uint64_t bytes, uint64_t settled_ps) {
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
  // Bookings not yet forgotten (sorted, disjoint, none touching the next).
  size_t bookings() const { return m_busy.size(); }

 private:
  struct interval {
    uint64_t start, end;
  };
  double m_ps_per_byte = 0;
  std::vector<interval> m_busy;
};

}  // namespace p2psim::memory
