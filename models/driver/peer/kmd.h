// The third-party device's kernel driver (GPUDirect RDMA 13.3, 6.2-6.4): pins GPU memory
// with nvidia_p2p_get_pages on 64 KiB-rounded ranges, maps it for its device, builds DMA
// descriptors from the page table (or the DMA mapping), and, when the NVIDIA driver revokes
// a mapping, waits for its in-flight DMA before freeing the page table. Pure C++: how the
// free callback waits is a hook the simulation fills in with simulated time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "models/driver/kernel/dma_buf.h"
#include "models/driver/kernel/user_memory.h"
#include "models/driver/nvidia/nv-p2p.h"

namespace p2psim::peer {

// GPU_BOUND_* of the guide's sample (6.2): BAR1 is mapped in 64 KiB pages.
inline constexpr uint64_t gpu_bound_shift = 16;
inline constexpr uint64_t gpu_bound_size = 1ull << gpu_bound_shift;
inline constexpr uint64_t gpu_bound_offset = gpu_bound_size - 1;
inline constexpr uint64_t gpu_bound_mask = ~gpu_bound_offset;

struct bus_segment {
  uint64_t bus_address = 0;
  uint64_t length = 0;
  uint64_t local_offset = 0;  // where in the device's local memory
};

class kmd;

// One pinned region: the guide's kmd_state.
struct kmd_region {
  uint64_t va = 0, size = 0;  // 64 KiB aligned
  uint64_t requested = 0;     // bytes the caller asked for, before the 64 KiB rounding
  nvidia_p2p_page_table_t* page_table = nullptr;
  nvidia_p2p_dma_mapping_t* dma_mapping = nullptr;
  int in_flight = 0;         // DMAs that use the region right now
  bool invalidated = false;  // the free callback ran: the pages are gone
  kmd* owner = nullptr;
  int pid = 0;      // the process that pinned it: only it unpins it
  uint64_t id = 0;  // unique for the kernel driver's life: a handle user space can keep
  // CPU memory (guide chapter 2): pinned by the kernel (pin_user_pages), not by nv-p2p, and
  // mapped for the device (dma_map_page: I/O virtual addresses behind a translating IOMMU).
  // No page table, and never revoked: the pages stay until unpinned, even if the process
  // frees its memory meanwhile.
  bool host = false;
  // GPU memory imported as a dma-buf (guide 4.1, the upstream path): the buffer the driver
  // holds a reference to, its attachment for the device and the mapping. No page table: the
  // device's runs are the mapping's segments. The NVIDIA exporter never moves the memory, so
  // such a region is never revoked by a free; the exporter's move_notify would revoke it.
  kernel::dma_buf* dmabuf = nullptr;
  kernel::dma_buf_attachment* attachment = nullptr;
  kernel::sg_table* sgt = nullptr;
  std::vector<kernel::bus_run> device_runs;  // the device's addresses of [va, va + size)
  std::vector<kernel::bus_run> iommu_maps;   // IOVA ranges to unmap
};

struct kmd_stats {
  uint64_t pins = 0, unpins = 0, pin_failures = 0, callbacks = 0, waited_callbacks = 0;
};

class kmd {
 public:
  // `use_dma_map`: program the device with nvidia_p2p_dma_map_pages addresses (needed with
  // a translating IOMMU) rather than the page table's physical addresses.
  kmd(pci_dev* device, bool use_dma_map);
  ~kmd();

  // The guide's kmd_pin_memory: rounds [address, address + size) out to 64 KiB and pins it.
  // 0 or the -errno of nvidia_p2p_get_pages / _dma_map_pages; -EINVAL for size 0.
  int pin(uint64_t address, uint64_t size, kmd_region** out);
  // Chapter 2's path for CPU memory: the kernel pins the pages holding [address, address +
  // size) of the calling process (its 4 KiB pages, not 64 KiB) and the driver maps them for
  // its device. 0, -EINVAL (size 0), -EFAULT (not the process's memory), -ENOMEM (no I/O
  // address space left).
  int pin_host(uint64_t address, uint64_t size, kmd_region** out);
  // The upstream path (guide 4.1): imports the dma-buf behind the calling process's descriptor
  // `fd` (dma_buf_get; a dynamic attachment that allows peer-to-peer, as RDMA drivers make;
  // dma_buf_map_attachment) as a region for [address, address + the buffer's size): the
  // address the program exported it from, which its DMA requests name. The region holds its
  // own reference, so the program may close `fd` at once. 0, -EBADF (not an open
  // descriptor), -EINVAL, or the -errno of the attach or map (-ENOMEM: no BAR1 or IOVA left).
  int import_dma_buf(int fd, uint64_t address, kmd_region** out);
  // The guide's unpin_memory (6.3). -EINVAL for a region that is not (or no longer) this
  // driver's, or another process's, or that was revoked meanwhile (its page table is already
  // gone and must not be used: forget() drops it).
  int unpin(kmd_region* r);
  // The live region with this id, or nullptr (unpinned since, or never).
  kmd_region* find(uint64_t id) const;
  // Drops the record of a revoked region, whose page table the free callback already freed:
  // what its owner does once it has seen the revocation (unpin refuses such a region), so
  // revoked regions do not pile up. -EINVAL for a region that is not revoked or not known.
  int forget(kmd_region* r);
  // Descriptors for [address, address + length) of a pinned region, one per contiguous run
  // of bus addresses; -EINVAL outside the region or after revocation.
  int dma_segments(const kmd_region& r, uint64_t address, uint64_t length, uint64_t local_offset,
                   std::vector<bus_segment>& out) const;
  void dma_begin(kmd_region& r) { ++r.in_flight; }
  void dma_end(kmd_region& r) { --r.in_flight; }

  // How the free callback waits for a region's DMA to drain; the default requires it idle.
  void set_wait_for_idle(std::function<void(kmd_region&)> wait) { m_wait = std::move(wait); }
  const kmd_stats& stats() const { return m_stats; }
  pci_dev* device() const { return m_device; }
  // Every region pinned and not yet unpinned (revoked ones included, marked `invalidated`):
  // what BAR1 sizing adds up to compare requested bytes with 64 KiB-rounded ones.
  const std::vector<std::unique_ptr<kmd_region>>& regions() const { return m_regions; }

 private:
  static void free_callback(void* data);  // the guide's free_callback (6.4)
  // An imported dma-buf's move_notify: as the free callback, the region is revoked once its
  // DMA has drained.
  static void move_notify(kernel::dma_buf_attachment* attach);
  void release_dma_buf(kmd_region& r);  // unmap (if mapped), detach, put
  kernel::dma_buf_attach_ops m_importer_ops;

  pci_dev* m_device;
  bool m_use_dma_map;
  std::vector<std::unique_ptr<kmd_region>> m_regions;
  uint64_t m_next_id = 1;
  std::function<void(kmd_region&)> m_wait;
  kmd_stats m_stats;
};

}  // namespace p2psim::peer
