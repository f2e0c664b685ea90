// A registration (pin-down) cache over the third-party kernel driver (GPUDirect RDMA 13.3,
// 5.1 Lazy Unpinning, 5.2 Registration Cache, 6.5 Buffer ID Tag Check): whole allocations
// (cuMemGetAddressRange) are pinned once, rounded to 64 KiB, kept pinned after use and
// evicted least-recently-used (or first in, first out) when a limit is reached or BAR1 runs
// out (-ENOMEM: evict and retry). Before an entry is reused its buffer ID is checked, so a
// freed or reallocated buffer is never served from a stale mapping. The cache lives in user
// space: a program has one per process, over the one kernel driver of the device.
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <vector>

#include "models/driver/peer/kmd.h"

namespace p2psim::peer {

// Which unused entry goes first when a limit is reached or BAR1 runs out (guide 5.1 names
// "the least recently used one" as an example; FIFO is what simpler caches do).
enum class eviction_policy {
  lru,   // least recently used
  fifo,  // pinned longest ago, however often it was used since
};

// How the cache gets GPU memory to the kernel driver (GPUDirect RDMA 13.3, 4.1).
enum class gpu_memory_path {
  nv_p2p,   // the kernel driver pins it with nvidia_p2p_get_pages
  dma_buf,  // the cache exports it (cuMemGetHandleForAddressRange) and the driver imports it
};

struct regcache_params {
  gpu_memory_path path = gpu_memory_path::nv_p2p;
  bool enabled = true;            // false: pin before and unpin after every use
  bool tag_check = true;          // check CU_POINTER_ATTRIBUTE_BUFFER_ID on every hit (6.5)
  uint64_t max_pinned_bytes = 0;  // evict beyond this; 0: only BAR1 exhaustion evicts
  size_t max_entries = 0;         // evict beyond this many regions; 0: no limit
  eviction_policy policy = eviction_policy::lru;
};

struct regcache_stats {
  uint64_t hits = 0, misses = 0, evictions = 0, enomem_retries = 0;
  uint64_t tag_invalidations = 0;  // entries found stale by the buffer-ID check
  uint64_t pinned_bytes = 0, peak_pinned_bytes = 0;
  uint64_t host_pins = 0;  // CPU memory pinned for one use (chapter 2's path)
};

class regcache {
 public:
  regcache(kmd& k, const regcache_params& p);

  // A pinned region covering [address, address + size), from the cache or freshly pinned.
  // 0, or a -errno (-EINVAL for memory that is not a live GPU allocation, -ENOMEM when
  // nothing more can be evicted). CPU memory (guide chapter 3: the library tells the two apart
  // by the pointer's memory type) takes chapter 2's path: page-locked memory, or memory the
  // kernel gave the process, is pinned by the kernel for this use alone and unpinned by
  // release(), never cached: no buffer ID would tell a freed and reallocated host buffer
  // from the old one.
  int acquire(uint64_t address, uint64_t size, kmd_region** out);
  // Done with it: stays pinned (lazy unpinning) unless the cache is disabled.
  void release(kmd_region* r);
  const regcache_stats& stats() const { return m_stats; }
  size_t entries() const { return m_entries.size(); }

 private:
  struct entry {
    uint64_t pointer = 0, size = 0;  // the allocation (cuMemGetAddressRange)
    uint64_t buffer_id = 0;          // taken right after pinning (6.5)
    kmd_region* region = nullptr;    // valid while the kernel driver still has `region_id`
    uint64_t region_id = 0;
    uint64_t size_pinned = 0;  // the region's 64 KiB-rounded size
    int users = 0;
  };
  static bool host_memory(uint64_t address, uint64_t size);
  // A region for [base, base + bytes) of GPU memory by the configured path.
  int pin(uint64_t base, uint64_t bytes, kmd_region** out);
  bool still_valid(const entry& e) const;
  void drop(std::list<entry>::iterator it);  // unpins it, or forgets it if revoked
  bool evict_one();

  kmd& m_kmd;
  regcache_params m_params;
  std::vector<kmd_region*> m_host;  // CPU regions acquired and not yet released
  std::list<entry> m_entries;       // the next to evict last: most recently used (LRU) or
                                    // pinned (FIFO) first
  regcache_stats m_stats;
};

}  // namespace p2psim::peer
