// The data-integrity rule for a DMA write that did not all land (a fault refused, lost or
// timed out some of it): every destination byte must hold either what was there before or
// the new data, and no more of the new data may be there than the fabric says landed.
// Anything else is a byte that reached memory it was not allowed to reach.
#pragma once

#include <cstdint>
#include <span>

namespace p2psim::core {

// `memory`: the destination as it is now; `written`: the data the DMA carried; `before`:
// the destination before it, where every byte differs from `written` (so each byte tells
// whether it arrived). Returns the bytes that escaped.
inline uint64_t escaped_bytes(std::span<const uint8_t> memory, std::span<const uint8_t> written,
                              std::span<const uint8_t> before, uint64_t landed) {
  uint64_t arrived = 0, foreign = 0;
  for (size_t i = 0; i < memory.size(); ++i) {
    arrived += memory[i] == written[i];
    foreign += memory[i] != written[i] && memory[i] != before[i];
  }
  return foreign + (arrived > landed ? arrived - landed : 0);
}

}  // namespace p2psim::core
