// Requester / completer IDs: bus[15:8] device[7:3] function[2:0].
#pragma once

#include <cstdint>

namespace p2psim::pcie {

inline uint16_t make_bdf(uint8_t bus, uint8_t dev, uint8_t fn) {
  return uint16_t(bus << 8 | (dev & 31) << 3 | (fn & 7));
}
inline uint8_t bus_of(uint16_t bdf) {
  return uint8_t(bdf >> 8);
}

}  // namespace p2psim::pcie
