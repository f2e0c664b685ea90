// Sparse byte storage for host DRAM, GPU VRAM and device memory: real bytes, allocated in
// 1 MiB chunks on first write, so a 64 GiB memory costs only what a scenario touches.
// Unwritten bytes read as zero. Direct-indexed: no hashing on the per-TLP path.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "models/memory/zeroed_array.h"

namespace p2psim::memory {

class backing_store {
 public:
  static constexpr uint64_t chunk_bytes = 1 << 20;

  explicit backing_store(uint64_t capacity);
  ~backing_store();
  backing_store(const backing_store&) = delete;
  backing_store& operator=(const backing_store&) = delete;
  uint64_t capacity() const { return m_capacity; }
  // Offsets are relative to the store; out-of-range access throws std::out_of_range.
  void write(uint64_t offset, std::span<const uint8_t> data);
  void read(uint64_t offset, std::span<uint8_t> out) const;
  void fill(uint64_t offset, uint64_t length, uint8_t value);
  uint64_t allocated_bytes() const { return m_allocated * chunk_bytes; }

 private:
  void check(uint64_t offset, uint64_t length) const;
  template <typename F>
  void for_each_piece(uint64_t offset, uint64_t length, F&& f) const;
  uint8_t* chunk_for_write(uint64_t index);

  uint64_t m_capacity;
  uint64_t m_allocated = 0;
  zeroed_array<uint8_t*> m_chunks;  // each null until first written, then owned (calloc)
};

}  // namespace p2psim::memory
