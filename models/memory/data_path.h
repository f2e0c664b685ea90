// A memory's data path, booked ahead: a read takes it once its access latency is over, a write
// as it comes in, so requests book it out of the order they come in. Each request takes the
// earliest free time from when it may start, in pieces around the bookings made before it:
// the bytes of a write go between those of reads booked earlier. (Served one after another in
// the order they came, as `throughput` serves, a write that came in during a read's access
// latency waited for that read's bytes, every write after it too: generated seed 2452.)
// Pure timing arithmetic in picoseconds.
#pragma once

#include <cstdint>
#include <vector>

#include "models/memory/throughput.h"

namespace p2psim::memory {

class data_path {
 public:
  data_path() = default;
  // gbs: GB/s (1e9 bytes/s); 0 = unlimited.
  explicit data_path(double gbs) : m_rate(gbs) {}
  uint64_t time_for(uint64_t bytes) const { return m_rate.time_for(bytes); }

  // Books `bytes` from `from_ps` on; returns when the last of them is through. No later
  // request starts before `settled_ps` (the simulated time now): bookings over by then are
  // forgotten.
  uint64_t serve(uint64_t from_ps, uint64_t bytes, uint64_t settled_ps);
  // Bookings not yet forgotten (sorted, disjoint, none touching the next).
  size_t bookings() const { return m_busy.size(); }

 private:
  struct interval {
    uint64_t start, end;
  };
  throughput m_rate;  // its rate (its in-order serving unused)
  std::vector<interval> m_busy;
};

}  // namespace p2psim::memory
