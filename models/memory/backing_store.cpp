#include "models/memory/backing_store.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace p2psim::memory {

backing_store::backing_store(uint64_t capacity)
    : m_capacity(capacity), m_chunks((capacity + chunk_bytes - 1) / chunk_bytes) {}

void backing_store::check(uint64_t offset, uint64_t length) const {
  if (offset > m_capacity || length > m_capacity - offset)
    throw std::out_of_range("access at offset " + std::to_string(offset) + " length " +
                            std::to_string(length) + " outside a store of " +
                            std::to_string(m_capacity) + " bytes");
}

uint8_t* backing_store::chunk_for_write(uint64_t index) {
  auto& c = m_chunks[index];
  if (!c) {
    c = std::make_unique<uint8_t[]>(chunk_bytes);  // value-initialized: zeros
    ++m_allocated;
  }
  return c.get();
}

void backing_store::write(uint64_t offset, std::span<const uint8_t> data) {
  check(offset, data.size());
  size_t done = 0;
  while (done < data.size()) {
    uint64_t a = offset + done;
    uint64_t in_chunk = a % chunk_bytes;
    size_t n = std::min<uint64_t>(data.size() - done, chunk_bytes - in_chunk);
    std::memcpy(chunk_for_write(a / chunk_bytes) + in_chunk, data.data() + done, n);
    done += n;
  }
}

void backing_store::read(uint64_t offset, std::span<uint8_t> out) const {
  check(offset, out.size());
  size_t done = 0;
  while (done < out.size()) {
    uint64_t a = offset + done;
    uint64_t in_chunk = a % chunk_bytes;
    size_t n = std::min<uint64_t>(out.size() - done, chunk_bytes - in_chunk);
    const auto& c = m_chunks[a / chunk_bytes];
    if (c)
      std::memcpy(out.data() + done, c.get() + in_chunk, n);
    else
      std::memset(out.data() + done, 0, n);
    done += n;
  }
}

void backing_store::fill(uint64_t offset, uint64_t length, uint8_t value) {
  check(offset, length);
  uint64_t done = 0;
  while (done < length) {
    uint64_t a = offset + done;
    uint64_t in_chunk = a % chunk_bytes;
    uint64_t n = std::min<uint64_t>(length - done, chunk_bytes - in_chunk);
    std::memset(chunk_for_write(a / chunk_bytes) + in_chunk, value, n);
    done += n;
  }
}

}  // namespace p2psim::memory
