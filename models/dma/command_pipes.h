// How long a DMA engine takes to move read data from its PCIe core into its local memory.
// A device that moves each DMA command's data over an internal bus at a fixed rate (a
// Netronome NFP's DMA engine writing into its memory units) finishes a read only once the
// last byte has crossed that bus, after it arrived on the link. Commands of at most
// `command_bytes`, aligned in local memory, each have a pipe of their own and move side by
// side, so one command is slow while many at once fill the link (docs/architecture.md,
// "Device-side data rate").
//
// Plain C++: the requester feeds it each completion's arrival and logs the byte as landed
// when the pipe says.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace p2psim::dma {

class command_pipes {
 public:
  // `bytes_per_ns` 0: no pipe, data lands as it arrives.
  command_pipes(uint64_t command_bytes, double bytes_per_ns)
      : m_command_bytes(command_bytes), m_ps_per_byte(bytes_per_ns > 0 ? 1e3 / bytes_per_ns : 0) {}
  bool enabled() const { return m_ps_per_byte > 0; }

  // Local bytes [offset, offset + bytes) of stream `stream` arrive in `tlps` TLPs of equal
  // size, the first whole at `first_ps`, the last at `last_ps`, evenly in between (one TLP:
  // the two are equal). Returns when the last of them is in local memory. `now_ps`: the
  // simulated time, below which a pipe's state no longer matters and is dropped.
  uint64_t land(uint32_t stream, uint64_t offset, uint64_t bytes, uint32_t tlps, uint64_t first_ps,
                uint64_t last_ps, uint64_t now_ps) {
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
    if (m_free_at.size() > k_drop_above) drop_idle(now_ps);
    return done;
  }

  size_t pipes_held() const { return m_free_at.size(); }

 private:
  uint64_t move_ps(uint64_t bytes) const { return uint64_t(bytes * m_ps_per_byte + 0.5); }
  void drop_idle(uint64_t now_ps) {
    std::erase_if(m_free_at, [&](const auto& e) { return e.second <= now_ps; });
  }
  static constexpr size_t k_drop_above = 256;  // pipes held before idle ones are looked for

  uint64_t m_command_bytes;  // 0: a stream's data is one command
  double m_ps_per_byte;
  // When each busy pipe (stream and command) is free again. A pipe free by now behaves as no
  // pipe at all, so dropping it changes nothing.
  std::unordered_map<uint64_t, uint64_t> m_free_at;
};

}  // namespace p2psim::dma
