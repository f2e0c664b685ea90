#include "models/gpu/bar1_page_table.h"

#include <stdexcept>

namespace p2psim::gpu {

bar1_page_table::bar1_page_table(uint64_t bar1_bytes, uint64_t reserved_bytes)
    : m_count(bar1_bytes / bar1_page_bytes),
      m_pages(memory::make_zeroed<uint64_t>(m_count)),
      m_reserved_pages((reserved_bytes + bar1_page_bytes - 1) / bar1_page_bytes) {
  if (bar1_bytes % bar1_page_bytes)
    throw std::invalid_argument("BAR1 size not a multiple of 64 KiB");
  if (m_reserved_pages >= m_count)
    throw std::invalid_argument("BAR1 reserved region covers the whole aperture");
}

std::optional<uint64_t> bar1_page_table::find_free(uint64_t count) const {
  if (count == 0) return std::nullopt;
  uint64_t run = 0;
  for (uint64_t p = m_reserved_pages; p < m_count; ++p) {
    run = m_pages[p] == unmapped ? run + 1 : 0;
    if (run == count) return p + 1 - count;
  }
  return std::nullopt;
}

void bar1_page_table::map(uint64_t first, uint64_t count, uint64_t vram_offset) {
  if (vram_offset % bar1_page_bytes) throw std::invalid_argument("VRAM offset not 64 KiB aligned");
  if (first < m_reserved_pages || first + count > m_count)
    throw std::out_of_range("BAR1 pages outside the usable aperture");
  for (uint64_t i = 0; i < count; ++i)
    if (m_pages[first + i] != unmapped) throw std::logic_error("BAR1 page already mapped");
  for (uint64_t i = 0; i < count; ++i) m_pages[first + i] = vram_offset / bar1_page_bytes + i + 1;
  m_mapped += count;
}

void bar1_page_table::unmap(uint64_t first, uint64_t count) {
  if (first + count > m_count) throw std::out_of_range("BAR1 pages outside the aperture");
  for (uint64_t i = 0; i < count; ++i)  // check the whole range before changing anything
    if (m_pages[first + i] == unmapped) throw std::logic_error("BAR1 page not mapped");
  for (uint64_t i = 0; i < count; ++i) m_pages[first + i] = unmapped;
  m_mapped -= count;
}

void bar1_page_table::map_reserved(uint64_t page, uint64_t vram_offset) {
  if (vram_offset % bar1_page_bytes) throw std::invalid_argument("VRAM offset not 64 KiB aligned");
  if (page >= m_reserved_pages) throw std::out_of_range("BAR1 page outside the reserved region");
  if (m_pages[page] != unmapped) throw std::logic_error("BAR1 page already mapped");
  m_pages[page] = vram_offset / bar1_page_bytes + 1;
}

void bar1_page_table::unmap_reserved(uint64_t page) {
  if (page >= m_reserved_pages) throw std::out_of_range("BAR1 page outside the reserved region");
  if (m_pages[page] == unmapped) throw std::logic_error("BAR1 page not mapped");
  m_pages[page] = unmapped;
}

}  // namespace p2psim::gpu
