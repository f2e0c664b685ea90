// The GPU's BAR1 aperture: 64 KiB pages, each mapped onto a 64 KiB page of VRAM or unmapped
// (GPUDirect RDMA 13.3, 5.2 and 6.2: BAR1 is mapped in 64 KiB pages). The first
// `reserved` bytes belong to the driver (5.5: 32 MB of 256 MB on Kepler) and are never handed
// out for peer mappings. Pure logic: the nv-p2p driver model allocates from it, the GPU model
// translates every inbound BAR1 access through it.
#pragma once

#include <cstdint>
#include <optional>

#include "models/memory/zeroed_array.h"

namespace p2psim::gpu {

inline constexpr uint64_t bar1_page_bytes = 64 * 1024;

class bar1_page_table {
 public:
  bar1_page_table(uint64_t bar1_bytes, uint64_t reserved_bytes);

  uint64_t size() const { return m_count * bar1_page_bytes; }
  uint64_t reserved() const { return m_reserved_pages * bar1_page_bytes; }
  uint64_t pages() const { return m_count; }
  uint64_t mapped_pages() const { return m_mapped; }
  uint64_t free_pages() const { return pages() - m_reserved_pages - m_mapped; }

  // Finds `count` contiguous free pages outside the reserved region; nullopt if none.
  std::optional<uint64_t> find_free(uint64_t count) const;
  // Maps BAR1 pages [first, first+count) onto VRAM starting at vram_offset (64 KiB aligned).
  void map(uint64_t first_page, uint64_t count, uint64_t vram_offset);
  void unmap(uint64_t first_page, uint64_t count);
  // The driver's own mappings, in the reserved region (a peer copy's destination pages):
  // they take nothing from the pages handed out for peer mappings.
  void map_reserved(uint64_t page, uint64_t vram_offset);
  void unmap_reserved(uint64_t page);
  // VRAM offset of a BAR1 offset, or nullopt if that page is not mapped.
  std::optional<uint64_t> translate(uint64_t bar1_offset) const {
    uint64_t page = bar1_offset / bar1_page_bytes;
    if (page >= m_count || m_pages[page] == unmapped) return std::nullopt;
    return (m_pages[page] - 1) * bar1_page_bytes + bar1_offset % bar1_page_bytes;
  }

 private:
  // Each page holds 1 + the VRAM page it maps, or 0: a 32 GiB aperture's table starts as
  // untouched zero pages.
  static constexpr uint64_t unmapped = 0;
  uint64_t m_count;
  memory::zeroed_array<uint64_t> m_pages;
  uint64_t m_reserved_pages;
  uint64_t m_mapped = 0;
};

}  // namespace p2psim::gpu
