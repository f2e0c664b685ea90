// Simulated time in picoseconds. These run several times per TLP, so they read and make the
// kernel's tick count directly: p2psim keeps SystemC's default time resolution, 1 ps (nothing
// calls sc_set_time_resolution; check_time_resolution() says so where a simulation starts).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <systemc>

namespace p2psim::transport {

// One tick, made once at program start (no guard on each use, as a function's static has).
inline const sc_core::sc_time one_tick = sc_core::sc_time::from_value(1);

inline void check_time_resolution() {
  if (sc_core::sc_get_time_resolution() != sc_core::sc_time(1, sc_core::SC_PS))
    throw std::logic_error("p2psim needs SystemC's default time resolution of 1 ps");
}
inline uint64_t to_ps(const sc_core::sc_time& t) {
  return t.value();
}
inline uint64_t now_ps() {  // the simulation context's clock, read inline
  return sc_core::sc_get_curr_simcontext()->time_stamp().value();
}
inline sc_core::sc_time ps(uint64_t v) {
  // sc_time's product with a double is inline where from_value is a library call; it is
  // exact up to 2^53 ticks (2.5 hours).
  return v < (uint64_t(1) << 53) ? one_tick * double(v) : sc_core::sc_time::from_value(v);
}

}  // namespace p2psim::transport
