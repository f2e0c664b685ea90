// Which module of the fabric ran last: every process of the models notes itself here when
// it starts (one store), so a watchdog that finds simulated time stuck can name the module
// that keeps running. Single-threaded, like the SystemC kernel.
#pragma once

#include <systemc>

namespace p2psim::transport {

inline const sc_core::sc_object*& last_active() {
  static const sc_core::sc_object* module = nullptr;
  return module;
}

inline void note_activity(const sc_core::sc_object* module) {
  last_active() = module;
}

}  // namespace p2psim::transport
