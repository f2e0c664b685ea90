// A resource that serves bytes at a fixed rate, one request after another: a memory
// controller's data path, a root complex's peer-to-peer forwarding engine, a bandwidth cap.
// Pure timing arithmetic in picoseconds; the SystemC shells ask it when a request is done.
#pragma once

#include <algorithm>
#include <cstdint>

namespace p2psim::memory {

class throughput {
 public:
  throughput() = default;
  // gbs: GB/s (1e9 bytes/s); 0 = unlimited.
  explicit throughput(double gbs) : m_ps_per_byte(gbs > 0 ? 1000.0 / gbs : 0) {}
  bool limited() const { return m_ps_per_byte > 0; }
  // Serves `bytes` arriving at `now`; returns when the last byte is through.
  uint64_t serve(uint64_t now_ps, uint64_t bytes) {
    uint64_t start = std::max(now_ps, m_free_at);
    m_free_at = start + time_for(bytes);
    return m_free_at;
  }
  uint64_t free_at() const { return m_free_at; }
  uint64_t time_for(uint64_t bytes) const { return uint64_t(bytes * m_ps_per_byte + 0.5); }

 private:
  double m_ps_per_byte = 0;
  uint64_t m_free_at = 0;
};

}  // namespace p2psim::memory
