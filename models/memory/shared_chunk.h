// A block of memory bytes that several owners may hold at once: the stores whose contents it
// is and the bursts carrying it between them. Whoever writes to a block others also hold
// copies it first (copy on write), so a burst that moves whole blocks moves references, not
// bytes, and still delivers exactly the bytes the source held when it was read.
// Single-threaded, like the SystemC kernel that drives it.
#pragma once

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace p2psim::memory {

// A sixteenth of a GPU BAR1 page, and what a read burst of 32 tags of 512 bytes moves.
inline constexpr uint64_t chunk_bytes = 16 * 1024;

struct chunk {
  uint32_t refs;
  alignas(64) uint8_t bytes[chunk_bytes];

  static chunk* zeroed() {  // calloc: untouched pages of a fresh block cost nothing
    auto* c = static_cast<chunk*>(std::calloc(1, sizeof(chunk)));
    if (!c) throw std::bad_alloc();
    c->refs = 1;
    return c;
  }
  static chunk* copy_of(const chunk& from) {
    auto* c = static_cast<chunk*>(std::malloc(sizeof(chunk)));
    if (!c) throw std::bad_alloc();
    c->refs = 1;
    std::memcpy(c->bytes, from.bytes, chunk_bytes);
    return c;
  }
  static void release(chunk* c) {
    if (c && --c->refs == 0) std::free(c);
  }
};

// The bytes of a chunk never written: what an empty reference reads as.
inline const uint8_t* zero_chunk_bytes() {
  alignas(64) static const uint8_t zeros[chunk_bytes] = {};
  return zeros;
}

// A counted reference to a chunk (empty when default-constructed, and then a chunk of zeros:
// a store's never-written chunk travels as an empty reference, so moving untouched memory
// allocates nothing at either end).
class shared_chunk {
 public:
  shared_chunk() = default;
  explicit shared_chunk(chunk* c) : m_chunk(c) {
    if (m_chunk) ++m_chunk->refs;
  }
  shared_chunk(const shared_chunk& o) : shared_chunk(o.m_chunk) {}
  shared_chunk(shared_chunk&& o) noexcept : m_chunk(o.m_chunk) { o.m_chunk = nullptr; }
  shared_chunk& operator=(shared_chunk o) noexcept {
    std::swap(m_chunk, o.m_chunk);
    return *this;
  }
  ~shared_chunk() { chunk::release(m_chunk); }
  void reset() { *this = shared_chunk(); }
  explicit operator bool() const { return m_chunk != nullptr; }
  chunk* get() const { return m_chunk; }
  const uint8_t* data() const { return m_chunk ? m_chunk->bytes : zero_chunk_bytes(); }

 private:
  chunk* m_chunk = nullptr;
};

// Consecutive chunks: what a burst of up to `max` chunks carries.
struct chunk_run {
  static constexpr uint32_t max = 4;  // a 64 KiB burst
  std::array<shared_chunk, max> chunks;
  uint32_t count = 0;
  explicit operator bool() const { return count != 0; }
  void reset() {
    for (uint32_t i = 0; i < count; ++i) chunks[i].reset();
    count = 0;
  }
};

}  // namespace p2psim::memory
