#include "models/pcie/split.h"

#include <algorithm>
#include <stdexcept>

namespace p2psim::pcie {
namespace {
constexpr uint64_t page_4k = 4096;

uint64_t next_boundary(uint64_t addr, uint64_t align) {
  return (addr / align + 1) * align;
}
}  // namespace

chunk request_splitter::next() {
  if (m_left == 0) throw std::logic_error("request_splitter: no bytes left");
  uint64_t end =
      std::min({m_addr + m_left, next_boundary(m_addr, m_max), next_boundary(m_addr, page_4k)});
  // max_bytes is a power of two no larger than 4 KiB, so its boundaries include 4 KiB's.
  chunk c{m_addr, uint32_t(end - m_addr)};
  m_addr = end;
  m_left -= c.length;
  return c;
}

chunk request_splitter::next_burst(uint64_t boundary, uint32_t max_tlps, uint32_t& tlps) {
  if (m_left == 0) throw std::logic_error("request_splitter: no bytes left");
  uint64_t end = std::min(m_addr + m_left, next_boundary(m_addr, boundary));
  // TLPs after the first are max_bytes long and aligned: at most max_tlps of them.
  uint64_t cap = std::min(end, next_boundary(m_addr, m_max) + uint64_t(max_tlps - 1) * m_max);
  end = std::min(end, cap);
  chunk c{m_addr, uint32_t(end - m_addr)};
  tlps = count_requests(c.address, c.length, m_max);
  m_addr = end;
  m_left -= c.length;
  return c;
}

uint32_t count_requests(uint64_t address, uint64_t length, uint32_t max_bytes) {
  // Boundaries of max_bytes include the 4 KiB ones: one TLP per max_bytes block touched.
  return length ? uint32_t((address + length - 1) / max_bytes - address / max_bytes + 1) : 0;
}

uint32_t count_completions(uint64_t address, uint64_t length, uint32_t request_bytes,
                           uint32_t max_bytes, uint32_t rcb) {
  if (address % request_bytes == 0 && request_bytes % max_bytes == 0 && max_bytes % rcb == 0) {
    // Aligned (what DMA engines issue): every completion but a request's last is max_bytes.
    const uint64_t rest = length % request_bytes;
    return uint32_t(length / request_bytes * (request_bytes / max_bytes) +
                    (rest + max_bytes - 1) / max_bytes);
  }
  uint32_t n = 0;
  request_splitter requests(address, length, request_bytes);
  while (!requests.done()) {
    chunk r = requests.next();
    for (uint64_t a = r.address, end = r.address + r.length; a < end; ++n)
      a = completion_stop(a, end, max_bytes, rcb);
  }
  return n;
}

end_tlps request_ends(uint64_t address, uint64_t length, uint32_t max_bytes) {
  if (!length || !max_bytes) return {};
  const uint64_t end = address + length;
  const uint64_t last_start = std::max(address, (end - 1) / max_bytes * max_bytes);
  return {uint32_t(std::min(end, next_boundary(address, max_bytes)) - address),
          uint32_t(end - last_start)};
}

end_tlps completion_ends(uint64_t address, uint64_t length, uint32_t request_bytes,
                         uint32_t max_bytes, uint32_t rcb) {
  if (!length || !request_bytes || !max_bytes || !rcb) return {};
  const uint64_t end = address + length;
  const end_tlps requests = request_ends(address, length, request_bytes);
  end_tlps out;
  out.first =
      uint32_t(completion_stop(address, address + requests.first, max_bytes, rcb) - address);
  uint64_t a = end - requests.last;  // the last request's completions: the last is wanted
  for (uint64_t stop = completion_stop(a, end, max_bytes, rcb); stop < end;
       stop = completion_stop(a, end, max_bytes, rcb))
    a = stop;
  out.last = uint32_t(end - a);
  return out;
}

std::vector<chunk> split_request(uint64_t address, uint64_t length, uint32_t max_bytes) {
  if (max_bytes == 0 || (max_bytes & (max_bytes - 1)) || max_bytes > page_4k)
    throw std::invalid_argument("split size must be a power of two up to 4096");
  std::vector<chunk> out;
  request_splitter s(address, length, max_bytes);
  while (!s.done()) out.push_back(s.next());
  return out;
}

std::vector<chunk> split_completion(uint64_t address, uint32_t length, uint32_t max_bytes,
                                    uint32_t rcb) {
  if (rcb != 64 && rcb != 128) throw std::invalid_argument("RCB must be 64 or 128 bytes");
  if (max_bytes < rcb || max_bytes % rcb)
    throw std::invalid_argument("completion size must be a multiple of the RCB");
  std::vector<chunk> out;
  uint64_t a = address, end = address + length;
  while (a < end) {
    const uint64_t stop = completion_stop(a, end, max_bytes, rcb);
    out.push_back({a, uint32_t(stop - a)});
    a = stop;
  }
  return out;
}

}  // namespace p2psim::pcie
