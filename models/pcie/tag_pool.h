// Tags a requester hands out to its outstanding non-posted requests: 32 (5-bit), 256 (8-bit
// Extended Tag) or up to 1024 (10-bit tags, PCIe 4.0 and later). A read waits for a free tag.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace p2psim::pcie {

class tag_pool {
 public:
  explicit tag_pool(uint32_t size) : m_in_use(size, false) {
    if (size == 0 || size > 1024) throw std::invalid_argument("tag count must be 1..1024");
    m_free.reserve(size);
    for (uint32_t t = size; t-- > 0;) m_free.push_back(uint16_t(t));
  }
  bool empty() const { return m_free.empty(); }
  uint32_t size() const { return uint32_t(m_in_use.size()); }
  uint32_t in_use() const { return size() - uint32_t(m_free.size()); }
  uint32_t available() const { return uint32_t(m_free.size()); }
  uint16_t acquire() {
    if (m_free.empty()) throw std::logic_error("tag_pool: no free tag");
    uint16_t t = m_free.back();
    m_free.pop_back();
    m_in_use[t] = true;
    return t;
  }
  // n tags at once (a read burst's), appended to `out`.
  void acquire(uint32_t n, std::vector<uint16_t>& out) {
    if (n > m_free.size()) throw std::logic_error("tag_pool: not enough free tags");
    for (auto it = m_free.end() - n; it != m_free.end(); ++it) m_in_use[*it] = true;
    out.insert(out.end(), m_free.end() - n, m_free.end());
    m_free.resize(m_free.size() - n);
  }
  void release(const std::vector<uint16_t>& tags) {
    for (uint16_t t : tags) {
      if (t >= m_in_use.size() || !m_in_use[t]) throw std::logic_error("tag_pool: tag not in use");
      m_in_use[t] = false;
    }
    m_free.insert(m_free.end(), tags.begin(), tags.end());
  }
  void release(uint16_t t) {
    if (t >= m_in_use.size() || !m_in_use[t]) throw std::logic_error("tag_pool: tag not in use");
    m_in_use[t] = false;
    m_free.push_back(t);
  }

 private:
  std::vector<bool> m_in_use;
  std::vector<uint16_t> m_free;  // lowest tag handed out first
};

}  // namespace p2psim::pcie
