// An address window: a BAR, a bridge's memory window, a memory range.
#pragma once

#include <cstdint>

namespace p2psim::pcie {

struct window {
  uint64_t base = 0, size = 0;  // size 0: absent
  bool contains(uint64_t a) const { return size && a >= base && a - base < size; }
};

}  // namespace p2psim::pcie
