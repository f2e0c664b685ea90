// The data a DMA moves: a reproducible byte pattern (xorshift64*), different for every seed.
// Its destination is filled with the complement beforehand, so stale bytes show.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace p2psim::core {

class byte_pattern {
 public:
  explicit byte_pattern(uint64_t seed)
      : m_x(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
  // The next out.size() bytes. They continue seamlessly across calls whose sizes are multiples
  // of 8.
  void next(std::span<uint8_t> out) {
    for (size_t i = 0; i < out.size(); i += 8) {
      m_x ^= m_x >> 12, m_x ^= m_x << 25, m_x ^= m_x >> 27;
      uint64_t v = m_x * 0x2545F4914F6CDD1Dull;
      for (size_t k = 0; k < 8 && i + k < out.size(); ++k) out[i + k] = uint8_t(v >> (8 * k));
    }
  }

 private:
  uint64_t m_x;
};

// The first `n` bytes of the pattern of `seed`.
inline std::vector<uint8_t> pattern_bytes(uint64_t seed, size_t n) {
  std::vector<uint8_t> out(n);
  byte_pattern(seed).next(out);
  return out;
}

}  // namespace p2psim::core
