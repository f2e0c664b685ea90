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
