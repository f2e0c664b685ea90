// Sparse byte storage for host DRAM, GPU VRAM and device memory: real bytes, allocated in
// 64 KiB chunks on first write, so a 64 GiB memory costs only what a scenario touches.
// Unwritten bytes read as zero. Direct-indexed: no hashing on the per-TLP path. Whole chunks
// can be shared with other stores (copy on write): see shared_chunk.h.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "models/memory/shared_chunk.h"
#include "models/memory/zeroed_array.h"

namespace p2psim::memory {

class backing_store {
 public:
  static constexpr uint64_t chunk_bytes = memory::chunk_bytes;

  explicit backing_store(uint64_t capacity);
  ~backing_store();
  backing_store(const backing_store&) = delete;
  backing_store& operator=(const backing_store&) = delete;
  uint64_t capacity() const { return m_capacity; }
  // Offsets are relative to the store; out-of-range access throws std::out_of_range.
  void write(uint64_t offset, std::span<const uint8_t> data);
  void read(uint64_t offset, std::span<uint8_t> out) const;
  void fill(uint64_t offset, uint64_t length, uint8_t value);
  // The chunks holding [offset, offset + length) if that is whole chunks, at most
  // chunk_run::max of them (empty otherwise: the caller copies bytes instead). A chunk never
  // written is an empty reference: it reads as zeros.
  chunk_run share(uint64_t offset, uint64_t length) const;
  // Makes the chunks from `offset` on those of `run` if offset is chunk-aligned; returns
  // false (nothing changed) otherwise.
  bool adopt(uint64_t offset, const chunk_run& run);
  uint64_t allocated_bytes() const { return m_allocated * chunk_bytes; }

 private:
  void check(uint64_t offset, uint64_t length) const;
  template <typename F>
  void for_each_piece(uint64_t offset, uint64_t length, F&& f) const;
  uint8_t* chunk_for_write(uint64_t index);  // allocated, and this store's alone

  uint64_t m_capacity;
  uint64_t m_allocated = 0;
  zeroed_array<chunk*> m_chunks;  // each null until first written, then counted
  // Indices of the chunks that were ever set, so the destructor never walks the index of a
  // large, sparsely written store (each page of it read would cost a page fault).
  std::vector<uint64_t> m_set;
};

}  // namespace p2psim::memory
