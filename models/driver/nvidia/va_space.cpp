#include "models/driver/nvidia/va_space.h"

#include <iterator>

namespace p2psim::nv {

namespace {
uint64_t round_up(uint64_t v, uint64_t a) {
  return (v + a - 1) & ~(a - 1);
}
}  // namespace

std::optional<uint64_t> va_space::take(uint64_t size, uint64_t align,
                                       const std::function<bool(uint64_t)>& usable) {
  if (size == 0) return std::nullopt;
  for (auto it = m_free.begin(); it != m_free.end(); ++it) {
    const uint64_t start = it->first, end = it->first + it->second;
    uint64_t at = round_up(start, align);
    while (at >= start && at < end && size <= end - at) {
      const uint64_t first = at / gpu_page_bytes, last = (at + size - 1) / gpu_page_bytes;
      if (!usable(first)) {
        at = round_up((first + 1) * gpu_page_bytes, align);
        continue;
      }
      if (!usable(last)) {
        at = round_up((last + 1) * gpu_page_bytes, align);
        continue;
      }
      m_free.erase(it);
      if (at > start) m_free[start] = at - start;
      if (at + size < end) m_free[at + size] = end - at - size;
      return at;
    }
  }
  return std::nullopt;
}

std::optional<uint64_t> va_space::take_highest(uint64_t size, uint64_t align) {
  if (size == 0) return std::nullopt;
  for (auto it = m_free.rbegin(); it != m_free.rend(); ++it) {
    const uint64_t start = it->first, end = it->first + it->second;
    if (size > end - start) continue;
    const uint64_t at = (end - size) / align * align;
    if (at < start) continue;
    if (take_at(at, size)) return at;
  }
  return std::nullopt;
}

bool va_space::take_at(uint64_t start, uint64_t size) {
  if (size == 0 || start + size < start) return false;
  auto it = m_free.upper_bound(start);
  if (it == m_free.begin()) return false;
  --it;
  const uint64_t from = it->first, end = it->first + it->second;
  if (start + size > end) return false;
  m_free.erase(it);
  if (start > from) m_free[from] = start - from;
  if (start + size < end) m_free[start + size] = end - start - size;
  return true;
}

void va_space::give_back(uint64_t start, uint64_t size) {
  auto next = m_free.find(start + size);
  if (next != m_free.end()) {
    size += next->second;
    m_free.erase(next);
  }
  auto after = m_free.lower_bound(start);
  if (after != m_free.begin()) {
    auto prev = std::prev(after);
    if (prev->first + prev->second == start) {
      prev->second += size;
      return;
    }
  }
  m_free[start] = size;
}

}  // namespace p2psim::nv
