// Simulated time in picoseconds. These run several times per TLP, so they convert with the
// kernel's tick count (SystemC's default resolution is 1 ps) instead of through a double.
#pragma once

#include <cstdint>
#include <systemc>

namespace p2psim::transport {

inline uint64_t ticks_per_ps() {
  static const uint64_t n = sc_core::sc_time(1, sc_core::SC_PS).value();
  return n;
}
inline uint64_t to_ps(const sc_core::sc_time& t) {
  const uint64_t n = ticks_per_ps();
  return n == 1 ? t.value() : t.value() / n;  // no division at the default resolution
}
inline uint64_t now_ps() {  // the simulation context's clock, read inline
  return to_ps(sc_core::sc_get_curr_simcontext()->time_stamp());
}
inline sc_core::sc_time ps(uint64_t v) {
  // sc_time's product with a double is inline where from_value is a library call; it is
  // exact up to 2^53 ticks (2.5 hours at 1 ps).
  static const sc_core::sc_time tick = sc_core::sc_time::from_value(1);
  const uint64_t ticks = v * ticks_per_ps();
  return ticks < (uint64_t(1) << 53) ? tick * double(ticks) : sc_core::sc_time::from_value(ticks);
}

}  // namespace p2psim::transport
