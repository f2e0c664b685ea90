// How long a TLP's credits are away: from when it starts on the link until the receiver's
// UpdateFC for it is back. Its way there, the receiver's hold, the way back; a receiver that
// passes a TLP on cut-through counts its hold from the TLP's header, so the hold and the
// TLP's own symbols overlap, while one that stores it whole counts it from the tail.
#pragma once

#include <algorithm>
#include <cstdint>

namespace p2psim::pcie {

struct credit_loop {
  uint64_t two_way_ps = 0;  // the link's latency there and back
  uint64_t hold_ps = 0;     // the least time the receiver holds a TLP before it frees it
  bool hold_from_tail = true;
  // For a TLP of `symbols_ps` on the wire.
  uint64_t of(uint64_t symbols_ps) const {
    return two_way_ps + (hold_from_tail ? symbols_ps + hold_ps : std::max(symbols_ps, hold_ps));
  }
};

}  // namespace p2psim::pcie
