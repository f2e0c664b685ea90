// Parameters give times in nanoseconds (doubles, as the files write them); the models count
// whole picoseconds.
#pragma once

#include <cstdint>

namespace p2psim::pcie {

// The nearest picosecond to `ns` (which is not negative).
inline uint64_t ns_to_ps(double ns) {
  return uint64_t(ns * 1000 + 0.5);
}

}  // namespace p2psim::pcie
