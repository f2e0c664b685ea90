// What the CPUs of a machine hold cached of one socket's host memory: a minimal model for
// visibility, not timing. The CPUs' caches are coherent with each other and with every
// snooped write (a DMA write without No Snoop, an AtomicOp): a write the root complex commits
// drops the lines it touches, so the next CPU load reads memory. A write with No Snoop set
// (PCIe Base 2.2.6.5: the requester says no cache holds the data, so the root complex need
// not snoop) leaves them: a CPU that cached a line reads it stale until the line is flushed
// (clflush) or evicted. When a cache evicts a line is not anyone's to say, so it is a choice
// (models/pcie/choices.h): the first CPU load of a line that a No Snoop write made stale finds
// it kept (0, stale from then on) or evicted (1, memory read again). CPU stores write through
// (no dirty lines), so a No Snoop read finds memory as a snooped one would.
//
// Plain C++: the root complex tells it of the writes it commits; `p2psim litmus` CPU agents
// load, store and flush through it.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <span>

#include "models/memory/backing_store.h"
#include "models/pcie/order_policy.h"

namespace p2psim::root_complex {

class cpu_cache {
 public:
  static constexpr uint64_t line_bytes = 64;

  // `order`: the rules in force (Host:snoop, Host:no-snoop) and who decides whether a stale
  // line was evicted (no choice source: kept).
  explicit cpu_cache(const pcie::order_policy& order) : m_order(order) {}

  // A CPU load of `out.size()` bytes at `offset`: the lines held give their bytes, the others
  // are read from memory and held from now on.
  void load(const memory::backing_store& memory, uint64_t offset, std::span<uint8_t> out) {
    for (uint64_t index = offset / line_bytes; index * line_bytes < offset + out.size(); ++index) {
      auto it = m_lines.find(index);
      if (it != m_lines.end() && it->second.stale_undecided) {
        it->second.stale_undecided = false;
        if (m_order.choices && m_order.choices->pick(2) == 1) {  // evicted meanwhile
          m_lines.erase(it);
          it = m_lines.end();
        }
      }
      if (it == m_lines.end()) {
        it = m_lines.try_emplace(index).first;
        memory.read(index * line_bytes, it->second.bytes);
      }
      for (uint64_t i = 0; i < line_bytes; ++i) {
        const uint64_t at = index * line_bytes + i;
        if (at >= offset && at < offset + out.size()) out[at - offset] = it->second.bytes[i];
      }
    }
  }
  // A CPU store: memory and the lines held (coherent, written through).
  void store(memory::backing_store& memory, uint64_t offset, std::span<const uint8_t> data) {
    memory.write(offset, data);
    for (uint64_t i = 0; i < data.size(); ++i)
      if (auto it = m_lines.find((offset + i) / line_bytes); it != m_lines.end())
        it->second.bytes[(offset + i) % line_bytes] = data[i];
  }
  // A flush (clflush): drops the lines of [offset, offset + bytes).
  void flush(uint64_t offset, uint64_t bytes) {
    if (m_lines.empty() || !bytes) return;
    m_lines.erase(m_lines.lower_bound(offset / line_bytes),
                  m_lines.upper_bound((offset + bytes - 1) / line_bytes));
  }
  // A write to [offset, offset + bytes) the root complex committed: snooped, the lines go; with
  // No Snoop, those held are stale now.
  void written(uint64_t offset, uint64_t bytes, bool no_snoop) {
    if (m_lines.empty() || !bytes) return;
    if (!no_snoop || !m_order.rules.enabled(pcie::order_rule::host_no_snoop)) {
      if (m_order.rules.enabled(pcie::order_rule::host_snoop)) flush(offset, bytes);
      return;
    }
    for (auto it = m_lines.lower_bound(offset / line_bytes);
         it != m_lines.end() && it->first <= (offset + bytes - 1) / line_bytes; ++it)
      it->second.stale_undecided = true;
  }
  size_t lines() const { return m_lines.size(); }

 private:
  struct line {
    std::array<uint8_t, line_bytes> bytes{};
    bool stale_undecided = false;  // a No Snoop write changed memory since the last load
  };
  const pcie::order_policy& m_order;
  std::map<uint64_t, line> m_lines;  // by line index
};

}  // namespace p2psim::root_complex
