#include "models/iommu/iommu.h"

#include <bit>
#include <iterator>
#include <stdexcept>

namespace p2psim::iommu {

const char* to_string(iommu_mode m) {
  switch (m) {
    case iommu_mode::off:
      return "off";
    case iommu_mode::passthrough:
      return "passthrough";
    case iommu_mode::translating:
      return "translating";
  }
  return "?";
}

iommu_domain::iommu_domain(const iommu_params& p) : m_params(p) {
  // PCIe requests never cross a 4 KiB boundary, so with pages of at least 4 KiB one TLP is
  // translated by one page-table entry.
  if (!std::has_single_bit(p.page_bytes) || p.page_bytes < 4096)
    throw std::invalid_argument("IOMMU page size must be a power of two of at least 4 KiB");
  m_shift = unsigned(std::countr_zero(p.page_bytes));
  m_next_page = (p.iova_base + p.page_bytes - 1) >> m_shift;  // aligned up to a page
  m_limit_page = p.iova_limit >> m_shift;
}

std::optional<uint64_t> iommu_domain::map(uint64_t phys, uint64_t bytes, bool readable,
                                          bool writable) {
  if (identity()) {
    ++m_stats.maps;
    return phys;
  }
  if (bytes == 0 || bytes - 1 > ~0ull - phys) return std::nullopt;
  const uint64_t first = phys >> m_shift, pages = ((phys + bytes - 1) >> m_shift) - first + 1;
  auto iova_page = allocate(pages);
  if (!iova_page) return std::nullopt;
  m_table.emplace(*iova_page, extent{pages, first, readable, writable});
  ++m_stats.maps;
  m_stats.mapped_pages += pages;
  return (*iova_page << m_shift) | (phys & (m_params.page_bytes - 1));
}

bool iommu_domain::unmap(uint64_t iova, uint64_t bytes) {
  if (identity()) {
    ++m_stats.unmaps;
    return true;
  }
  if (bytes == 0 || bytes - 1 > ~0ull - iova) return false;
  const uint64_t first = iova >> m_shift, last = (iova + bytes - 1) >> m_shift;
  if (!covered(first, last)) return false;
  split_at(first);
  split_at(last + 1);
  m_table.erase(m_table.lower_bound(first), m_table.lower_bound(last + 1));
  iotlb_invalidate(first, last);  // no stale translation may outlive the mapping
  release(first, last - first + 1);
  ++m_stats.unmaps;
  m_stats.mapped_pages -= last - first + 1;
  return true;
}

translation iommu_domain::translate(uint64_t iova, bool write) {
  ++m_stats.translations;
  if (identity()) return {true, iova, true};
  const uint64_t page = iova >> m_shift;
  translation t;
  t.iotlb_hit = iotlb_lookup(page);
  ++(t.iotlb_hit ? m_stats.iotlb_hits : m_stats.iotlb_misses);
  uint64_t first = 0;
  const extent* e = lookup(page, first);
  if (!e) {  // the walk found nothing: a DMA remapping fault
    ++m_stats.faults;
    return t;
  }
  if (!t.iotlb_hit) iotlb_insert(page);  // the IOTLB caches the entry, permissions included
  if (!(write ? e->writable : e->readable)) {
    ++m_stats.faults;
    return t;
  }
  t.ok = true;
  t.address = ((e->phys_page + page - first) << m_shift) | (iova & (m_params.page_bytes - 1));
  return t;
}

std::optional<uint64_t> iommu_domain::mapped_to(uint64_t iova, bool write) const {
  if (identity()) return iova;
  const uint64_t page = iova >> m_shift;
  uint64_t first = 0;
  const extent* e = lookup(page, first);
  if (!e || !(write ? e->writable : e->readable)) return std::nullopt;
  return ((e->phys_page + page - first) << m_shift) | (iova & (m_params.page_bytes - 1));
}

// The run holding I/O page `page` (and its first page in `first`), or nullptr.
const iommu_domain::extent* iommu_domain::lookup(uint64_t page, uint64_t& first) const {
  auto it = m_table.upper_bound(page);
  if (it == m_table.begin()) return nullptr;
  --it;
  if (page - it->first >= it->second.pages) return nullptr;
  first = it->first;
  return &it->second;
}

// Whether every page of [first, last] is mapped (possibly by several runs).
bool iommu_domain::covered(uint64_t first, uint64_t last) const {
  uint64_t run = 0;
  for (uint64_t p = first;;) {
    const extent* e = lookup(p, run);
    if (!e) return false;
    const uint64_t end = run + e->pages;  // one past the run
    if (end > last) return true;
    p = end;
  }
}

// Cuts the run holding `page` in two so that a run starts at `page`.
void iommu_domain::split_at(uint64_t page) {
  uint64_t first = 0;
  const extent* e = lookup(page, first);
  if (!e || first == page) return;
  extent right = *e;
  right.pages = e->pages - (page - first);
  right.phys_page += page - first;
  m_table[first].pages = page - first;
  m_table.emplace(page, right);
}

// First fit among freed ranges, else from the bump pointer. Freed IOVA is reused only once
// unmapped (and flushed from the IOTLB), so live ranges never overlap.
std::optional<uint64_t> iommu_domain::allocate(uint64_t pages) {
  for (auto it = m_free.begin(); it != m_free.end(); ++it) {
    if (it->second < pages) continue;
    const uint64_t first = it->first, rest = it->second - pages;
    m_free.erase(it);
    if (rest) m_free.emplace(first + pages, rest);
    return first;
  }
  if (m_next_page >= m_limit_page || pages > m_limit_page - m_next_page) return std::nullopt;
  const uint64_t first = m_next_page;
  m_next_page += pages;
  return first;
}

// Returns IOVA pages to the allocator, merging neighbours; a range that ends at the bump
// pointer lowers it instead, so map/unmap in LIFO order keeps the free list empty.
void iommu_domain::release(uint64_t first, uint64_t pages) {
  auto next = m_free.lower_bound(first);
  if (next != m_free.end() && first + pages == next->first) {
    pages += next->second;
    next = m_free.erase(next);
  }
  if (next != m_free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == first) {
      first = prev->first;
      pages += prev->second;
      m_free.erase(prev);
    }
  }
  if (first + pages == m_next_page)
    m_next_page = first;
  else
    m_free.emplace(first, pages);
}

bool iommu_domain::iotlb_lookup(uint64_t page) {
  auto it = m_iotlb.find(page);
  if (it == m_iotlb.end()) return false;
  m_lru.splice(m_lru.begin(), m_lru, it->second);  // most recently used
  return true;
}

void iommu_domain::iotlb_insert(uint64_t page) {
  if (m_params.iotlb_entries == 0) return;
  m_lru.push_front(page);
  m_iotlb[page] = m_lru.begin();
  if (m_lru.size() > m_params.iotlb_entries) {  // evict the least recently used
    m_iotlb.erase(m_lru.back());
    m_lru.pop_back();
    ++m_stats.iotlb_evictions;
  }
}

void iommu_domain::iotlb_invalidate(uint64_t first, uint64_t last) {
  // Whichever is shorter: the unmapped pages or the IOTLB itself.
  if (last - first < m_lru.size()) {
    for (uint64_t p = first; p <= last; ++p)
      if (auto it = m_iotlb.find(p); it != m_iotlb.end()) {
        m_lru.erase(it->second);
        m_iotlb.erase(it);
      }
    return;
  }
  for (auto it = m_lru.begin(); it != m_lru.end();) {
    if (*it >= first && *it <= last) {
      m_iotlb.erase(*it);
      it = m_lru.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace p2psim::iommu
