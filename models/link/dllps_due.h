// The ACK and UpdateFC DLLPs a link direction owes as it sends (docs/architecture.md, "Timing
// model and why"): plain arithmetic on the time since each DLLP, run for every TLP a link
// starts.
#pragma once

#include <cstdint>

#include "models/link/link_channel.h"
#include "models/pcie/link_timing.h"

namespace p2psim::link {

// Adds `fresh` units to a DLLP counter that owes one DLLP every `limit` units (0: never);
// returns the DLLPs now due. A TLP is at most a few limits long: subtracting beats dividing.
inline uint64_t due_dllps(uint64_t& counter, uint64_t fresh, uint64_t limit) {
  if (!limit) return 0;
  counter += fresh;
  uint64_t n = 0;
  if (counter >= 8ull * limit) {  // a burst: many at once
    n = counter / limit;
    counter %= limit;
  }
  while (counter >= limit) counter -= limit, ++n;
  return n;
}

// ACK and UpdateFC DLLPs take 8 of every ack_limit (fc_limit) bytes of a direction's time,
// their own bytes included: the rate of the spec's tables, and pcie-bench's model. The
// receiver's timers run in symbol times, SKIPs included, so the counters do too: where SKIPs
// take 4 of every 1538 symbol times a wire byte is 1538 units and a limit's byte 1534, and
// TLPs get raw * (1 - a - s) as in docs/design.md's formula (counting wire bytes alone would
// give raw * (1 - a) * (1 - s), a * s above it; seed 3489 of tests/generated). The DLLPs due
// as `fresh` bytes go out, given the time each counter has run up.
inline uint64_t dllps_due_for(uint64_t& ack_time, uint64_t& fc_time, uint64_t fresh,
                              const channel_timing& t) {
  const uint64_t byte_units = t.skip_ordered_sets ? pcie::skip_interval_symbols : 1;
  const uint64_t limit_units =
      t.skip_ordered_sets ? pcie::skip_interval_symbols - pcie::skip_symbols : 1;
  uint64_t n = 0;
  while (fresh) {
    const uint64_t units = fresh * byte_units;
    const uint64_t dllps = due_dllps(ack_time, units, t.ack_limit * limit_units) +
                           due_dllps(fc_time, units, t.fc_limit * limit_units);
    fresh = dllps * pcie::dllp_bytes;
    n += dllps;
  }
  return n;
}

}  // namespace p2psim::link
