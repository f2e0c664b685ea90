#include "models/memory/backing_store.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace p2psim::memory {

backing_store::backing_store(uint64_t capacity)
    : m_capacity(capacity),
      m_chunks(make_zeroed<chunk*>((capacity + chunk_bytes - 1) / chunk_bytes)) {}

backing_store::~backing_store() {
  for (uint64_t i : m_set) {
    chunk::release(m_chunks[i]);  // null for one set and emptied again
    m_chunks[i] = nullptr;        // an index set twice is in m_set twice
  }
}

void backing_store::check(uint64_t offset, uint64_t length) const {
  if (offset > m_capacity || length > m_capacity - offset)
    throw std::out_of_range("access at offset " + std::to_string(offset) + " length " +
                            std::to_string(length) + " outside a store of " +
                            std::to_string(m_capacity) + " bytes");
}

uint8_t* backing_store::chunk_for_write(uint64_t index) {
  chunk*& c = m_chunks[index];
  if (!c) {
    c = chunk::zeroed();
    ++m_allocated;
    m_set.push_back(index);
  } else if (c->refs > 1) {  // shared: this store gets a copy of its own first
    chunk* mine = chunk::copy_of(*c);
    chunk::release(c);
    c = mine;
  }
  return c->bytes;
}

chunk_run backing_store::share(uint64_t offset, uint64_t length) const {
  check(offset, length);
  chunk_run run;
  if (offset % chunk_bytes || length % chunk_bytes || length / chunk_bytes > chunk_run::max)
    return run;
  for (uint64_t i = 0; i < length / chunk_bytes; ++i)  // never written: an empty reference
    run.chunks[run.count++] = shared_chunk(m_chunks[offset / chunk_bytes + i]);
  return run;
}

bool backing_store::adopt(uint64_t offset, const chunk_run& run) {
  check(offset, run.count * chunk_bytes);
  if (offset % chunk_bytes || !run) return false;
  for (uint32_t i = 0; i < run.count; ++i) {
    chunk*& slot = m_chunks[offset / chunk_bytes + i];
    chunk* c = run.chunks[i].get();
    if (slot == c) continue;
    const bool was_empty = !slot;
    if (slot) {
      chunk::release(slot);
      --m_allocated;
    }
    slot = c;  // null for a chunk of zeros: this one is unwritten again
    if (slot) {
      ++slot->refs;
      ++m_allocated;
      if (was_empty) m_set.push_back(offset / chunk_bytes + i);
    }
  }
  return true;
}

// Visits [offset, offset + length) chunk by chunk: f(chunk index, offset in chunk, bytes
// done so far, bytes in this piece).
template <typename F>
void backing_store::for_each_piece(uint64_t offset, uint64_t length, F&& f) const {
  check(offset, length);
  for (uint64_t done = 0; done < length;) {
    uint64_t a = offset + done;
    uint64_t in_chunk = a % chunk_bytes;
    uint64_t n = std::min<uint64_t>(length - done, chunk_bytes - in_chunk);
    f(a / chunk_bytes, in_chunk, done, n);
    done += n;
  }
}

namespace {
bool all_zero(const uint8_t* p, uint64_t n) {
  return n == 0 || (p[0] == 0 && std::memcmp(p, p + 1, n - 1) == 0);
}
}  // namespace

void backing_store::write(uint64_t offset, std::span<const uint8_t> data) {
  for_each_piece(offset, data.size(), [&](uint64_t chunk, uint64_t at, uint64_t done, uint64_t n) {
    const uint8_t* from = data.data() + done;
    // Zeros onto a chunk never written change nothing: it stays unallocated.
    if (!m_chunks[chunk] && all_zero(from, n)) return;
    std::memcpy(chunk_for_write(chunk) + at, from, n);
  });
}

void backing_store::read(uint64_t offset, std::span<uint8_t> out) const {
  for_each_piece(offset, out.size(), [&](uint64_t chunk, uint64_t at, uint64_t done, uint64_t n) {
    if (const struct chunk* c = m_chunks[chunk])
      std::memcpy(out.data() + done, c->bytes + at, n);
    else
      std::memset(out.data() + done, 0, n);  // never written: zeros
  });
}

void backing_store::fill(uint64_t offset, uint64_t length, uint8_t value) {
  for_each_piece(offset, length, [&](uint64_t chunk, uint64_t at, uint64_t, uint64_t n) {
    std::memset(chunk_for_write(chunk) + at, value, n);
  });
}

}  // namespace p2psim::memory
