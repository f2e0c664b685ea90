#include "models/dma/command_pipes.h"

#include <algorithm>

namespace p2psim::dma {

namespace {
constexpr size_t drop_above = 256;  // pipes held before idle ones are looked for
}

uint64_t command_pipes::land(uint32_t stream, uint64_t offset, uint64_t bytes, uint32_t tlps,
                             uint64_t first_ps, uint64_t last_ps, uint64_t now_ps) {
  if (!enabled() || bytes == 0) return last_ps;
  tlps = std::max<uint32_t>(tlps, 1);
  const uint64_t tlp_bytes = (bytes + tlps - 1) / tlps;
  // When TLP k (0-based) is whole: evenly from the first to the last.
  auto arrival = [&](uint64_t k) {
    return tlps == 1 ? last_ps : first_ps + (last_ps - first_ps) * k / (tlps - 1);
  };
  const uint64_t end = offset + bytes;
  uint64_t done = last_ps;
  for (uint64_t at = offset; at < end;) {
    const uint64_t command = m_command_bytes ? at / m_command_bytes : 0;
    const uint64_t piece_end =
        m_command_bytes ? std::min(end, (command + 1) * m_command_bytes) : end;
    const uint64_t k0 = (at - offset) / tlp_bytes, k1 = (piece_end - 1 - offset) / tlp_bytes;
    const uint64_t last_tlp_bytes = piece_end - std::max(at, offset + k1 * tlp_bytes);
    uint64_t& free_at = m_free_at[(uint64_t(stream) << 40) | command];
    // A TLP's data moves once the TLP is whole (its LCRC checked), one TLP after another: the
    // piece is through when its bytes have moved from its first TLP on, and no sooner than its
    // last TLP's bytes after that one is in (exact where the TLPs come evenly).
    free_at = std::max(std::max(free_at, arrival(k0)) + move_ps(piece_end - at),
                       arrival(k1) + move_ps(last_tlp_bytes));
    done = std::max(done, free_at);
    at = piece_end;
  }
  if (m_free_at.size() > drop_above) drop_idle(now_ps);
  return done;
}

void command_pipes::drop_idle(uint64_t now_ps) {
  std::erase_if(m_free_at, [&](const auto& e) { return e.second <= now_ps; });
}

}  // namespace p2psim::dma
