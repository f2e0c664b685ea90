#include "models/driver/peer/regcache.h"

#include <algorithm>

#include "models/driver/cuda/cuda.h"
#include "models/driver/kernel/kernel.h"
#include "models/driver/kernel/syscalls.h"

namespace p2psim::peer {

regcache::regcache(kmd& k, const regcache_params& p) : m_kmd(k), m_params(p) {}

// The guide's buf_is_gpu_pinning_valid (6.5). The cache lives in user space and gets no
// up-call when the kernel driver's free callback revokes a region: the buffer ID is how it
// finds out. Without the check a stale entry is served, and the DMA programmed from it fails.
bool regcache::still_valid(const entry& e) const {
  // Unpinned behind the cache's back (its handle is closed: the kernel driver would refuse
  // it). Whether it was revoked the cache cannot see from user space: that is what the tag
  // check is for.
  if (!m_kmd.find(e.region_id)) return false;
  if (!m_params.tag_check) return true;
  uint64_t id = 0;
  CUresult rc = cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, e.pointer);
  return rc == CUDA_SUCCESS && id == e.buffer_id;
}

void regcache::drop(std::list<entry>::iterator it) {
  m_stats.pinned_bytes -= it->size_pinned;
  // Gone already if it was unpinned behind the cache's back; a revoked one has nothing to
  // unpin, only its record to drop.
  if (kmd_region* r = m_kmd.find(it->region_id)) {
    if (r->invalidated)
      m_kmd.forget(r);
    else
      m_kmd.unpin(r);
  }
  m_entries.erase(it);
}

bool regcache::evict_one() {
  for (auto it = m_entries.rbegin(); it != m_entries.rend(); ++it)
    if (it->users == 0) {
      ++m_stats.evictions;
      drop(std::next(it).base());
      return true;
    }
  return false;
}

int regcache::acquire(uint64_t address, uint64_t size, kmd_region** out) {
  if (!out || !size || size > ~uint64_t(0) - address) return -EINVAL;
  if (host_memory(address, size)) {
    const int ret = m_kmd.pin_host(address, size, out);
    if (ret == 0) {
      m_host.push_back(*out);
      ++m_stats.host_pins;
    }
    return ret;
  }
  for (auto it = m_entries.begin(); it != m_entries.end(); ++it) {
    if (address < it->pointer || address - it->pointer + size > it->size) continue;
    if (!still_valid(*it)) {  // freed or reallocated since: invalidate, then re-pin (6.5)
      ++m_stats.tag_invalidations;
      if (it->users == 0) drop(it);  // (a revoked region is not unpinned again)
      break;
    }
    ++m_stats.hits;
    ++it->users;
    // A use moves the entry away from eviction only under LRU; FIFO keeps the pinning order.
    if (m_params.policy == eviction_policy::lru) m_entries.splice(m_entries.begin(), m_entries, it);
    *out = it->region;
    return 0;
  }
  ++m_stats.misses;
  // Pin the whole allocation (6.5 step 1), so later uses of other parts of it hit. Without
  // the cache, pin just what this transfer needs (5.1: pin before it, unpin right after).
  CUdeviceptr base = 0;
  size_t bytes = 0;
  if (cuMemGetAddressRange(&base, &bytes, address) != CUDA_SUCCESS) return -EINVAL;
  if (address - base + size > bytes) return -EINVAL;  // not all in one allocation
  if (!m_params.enabled) {
    base = address;
    bytes = size;
  }
  const uint64_t aligned = base & gpu_bound_mask;  // what kmd::pin will pin (6.2 rounding)
  const uint64_t aligned_size = (base + bytes - aligned + gpu_bound_size - 1) & gpu_bound_mask;
  while (m_params.max_pinned_bytes &&
         m_stats.pinned_bytes + aligned_size > m_params.max_pinned_bytes && evict_one()) {
  }
  while (m_params.max_entries && m_entries.size() >= m_params.max_entries && evict_one()) {
  }
  kmd_region* r = nullptr;
  int ret;
  while ((ret = pin(base, bytes, &r)) == -ENOMEM) {  // BAR1 full: evict one, retry
    if (!evict_one()) return ret;
    ++m_stats.enomem_retries;
  }
  if (ret) return ret;
  entry e;
  e.pointer = base;
  e.size = bytes;
  e.region = r;
  e.region_id = r->id;
  e.size_pinned = aligned_size;  // the BAR1 pages it takes, whichever path
  e.users = 1;
  cuPointerGetAttribute(&e.buffer_id, CU_POINTER_ATTRIBUTE_BUFFER_ID, base);
  m_entries.push_front(e);
  m_stats.pinned_bytes += aligned_size;
  m_stats.peak_pinned_bytes = std::max(m_stats.peak_pinned_bytes, m_stats.pinned_bytes);
  *out = r;
  return 0;
}

// The dma-buf path exports whole CPU pages (cuMemGetHandleForAddressRange takes 4 KiB-aligned
// ranges), hands the descriptor to the kernel driver and closes it: the import holds its own
// reference, as RDMA drivers' registrations of dma-bufs do.
int regcache::pin(uint64_t base, uint64_t bytes, kmd_region** out) {
  if (m_params.path == gpu_memory_path::nv_p2p) return m_kmd.pin(base, bytes, out);
  const uint64_t page = kernel::page_bytes;
  const uint64_t start = base / page * page;
  const uint64_t size = (base + bytes - start + page - 1) / page * page;
  int fd = -1;
  const CUresult rc =
      cuMemGetHandleForAddressRange(&fd, start, size, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
  if (rc == CUDA_ERROR_OUT_OF_MEMORY) return -ENOMEM;
  if (rc != CUDA_SUCCESS) return -EINVAL;
  const int ret = m_kmd.import_dma_buf(fd, start, out);
  kernel::sys::close(fd);
  return ret;
}

// Page-locked memory (CUDA says so), or memory the kernel gave the calling process.
bool regcache::host_memory(uint64_t address, uint64_t size) {
  unsigned int type = 0;
  if (cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address) == CUDA_SUCCESS)
    return type == CU_MEMORYTYPE_HOST;
  return kernel::current_os()
      .memory()
      .block_of(kernel::current_pid(), reinterpret_cast<const void*>(uintptr_t(address)), size)
      .has_value();
}

void regcache::release(kmd_region* r) {
  if (auto h = std::find(m_host.begin(), m_host.end(), r); h != m_host.end()) {
    m_host.erase(h);
    m_kmd.unpin(r);
    return;
  }
  auto it = std::find_if(m_entries.begin(), m_entries.end(),
                         [&](const entry& e) { return e.region == r; });
  if (it == m_entries.end()) return;  // revoked meanwhile
  if (--it->users == 0 && !m_params.enabled) drop(it);
}

}  // namespace p2psim::peer
