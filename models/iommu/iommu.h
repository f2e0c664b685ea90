// An IOMMU translation domain for one device (docs/design.md, "Topology classes"; GPUDirect
// RDMA 13.3, 5.4 IOMMUs): off (no IOMMU), pass-through (identity), or translating through I/O
// page tables with an IOTLB. Pure logic; the root complex consults it for every request from a
// device.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <unordered_map>

#include "models/iommu/iommu_spec.h"
#include "models/stats/stat.h"

namespace p2psim::iommu {

// The declared settings and the IOVA range the platform leaves to the allocator.
struct iommu_params : iommu_spec {
  uint64_t iova_base = 1ull << 32;  // where the IOVA allocator starts
  uint64_t iova_limit = 1ull << 48;
};

struct translation {
  bool ok = false;        // false: no mapping (or no permission): the DMA is blocked
  uint64_t address = 0;   // the physical address
  bool iotlb_hit = true;  // false: a page walk (miss_latency_ns) was needed
};

struct iommu_stats {
  uint64_t translations = 0, iotlb_hits = 0, iotlb_misses = 0, iotlb_evictions = 0;
  uint64_t faults = 0;        // unmapped or permission-violating accesses
  uint64_t mapped_pages = 0;  // I/O pages mapped now
  uint64_t maps = 0, unmaps = 0;
};

// The counters; the domain's mode is reported beside them (stats_dump).
inline const stats::table<iommu_stats>& iommu_stat_table() {
  using stats::unit;
  static const stats::table<iommu_stats> t{
      stats::counter("translations", &iommu_stats::translations, unit::count,
                     "Requests translated."),
      stats::counter("iotlb_hits", &iommu_stats::iotlb_hits, unit::count, "Of those, IOTLB hits."),
      stats::counter("iotlb_misses", &iommu_stats::iotlb_misses, unit::count,
                     "Of those, page walks."),
      stats::counter("iotlb_evictions", &iommu_stats::iotlb_evictions, unit::count,
                     "IOTLB entries evicted (LRU)."),
      stats::counter("faults", &iommu_stats::faults, unit::count,
                     "Unmapped or permission-violating accesses: blocked."),
      stats::counter("mapped_pages", &iommu_stats::mapped_pages, unit::pages,
                     "I/O pages mapped at the end."),
      stats::counter("maps", &iommu_stats::maps, unit::count, "Map calls."),
      stats::counter("unmaps", &iommu_stats::unmaps, unit::count, "Unmap calls."),
  };
  return t;
}

class iommu_domain {
 public:
  // Throws std::invalid_argument for a page size that is not a power of two of at least 4 KiB.
  explicit iommu_domain(const iommu_params& p = {});
  iommu_mode mode() const { return m_params.mode; }
  const iommu_params& params() const { return m_params; }
  // Maps [phys, phys + bytes) at a fresh IOVA range (page granular; the offset of `phys`
  // within its page is kept). Off / pass-through: returns `phys` itself. nullopt when the
  // IOVA space is exhausted or `bytes` is 0.
  std::optional<uint64_t> map(uint64_t phys, uint64_t bytes, bool readable = true,
                              bool writable = true);
  // Unmaps the I/O pages of [iova, iova + bytes) (what map() returned, or part of it) and
  // drops them from the IOTLB; false, changing nothing, if any of them was not mapped.
  bool unmap(uint64_t iova, uint64_t bytes);
  // The physical address a DMA to `iova` reaches.
  translation translate(uint64_t iova, bool write);
  // Where a DMA to `iova` goes, looked up without the IOTLB and without counting (nullopt: it
  // would fault): for a model that needs to know it before the DMA is translated.
  std::optional<uint64_t> mapped_to(uint64_t iova, bool write) const;
  const iommu_stats& stats() const { return m_stats; }

 private:
  // A run of I/O pages mapped onto as many consecutive physical pages: one map() is one run,
  // so a large mapping costs one entry, yet lookups and unmaps stay page granular.
  struct extent {
    uint64_t pages;
    uint64_t phys_page;
    bool readable, writable;
  };
  bool identity() const { return m_params.mode != iommu_mode::translating; }
  const extent* lookup(uint64_t page, uint64_t& first) const;
  bool covered(uint64_t first, uint64_t last) const;
  void split_at(uint64_t page);
  std::optional<uint64_t> allocate(uint64_t pages);
  void release(uint64_t first, uint64_t pages);
  bool iotlb_lookup(uint64_t page);
  void iotlb_insert(uint64_t page);
  void iotlb_invalidate(uint64_t first, uint64_t last);

  iommu_params m_params;
  unsigned m_shift = 12;               // log2(page_bytes)
  std::map<uint64_t, extent> m_table;  // first I/O page of a run -> the run
  uint64_t m_next_page = 0;            // bump allocator, in I/O pages
  uint64_t m_limit_page = 0;
  std::map<uint64_t, uint64_t> m_free;  // freed IOVA below m_next_page: first page -> pages
  std::list<uint64_t> m_lru;            // IOTLB, most recent first
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> m_iotlb;
  iommu_stats m_stats;
};

}  // namespace p2psim::iommu
