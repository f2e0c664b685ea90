#include "models/driver/peer/kmd.h"

#include <algorithm>
#include <stdexcept>

#include "models/driver/kernel/kernel.h"
#include "models/iommu/iommu.h"

namespace p2psim::peer {

kmd::kmd(pci_dev* device, bool use_dma_map) : m_device(device), m_use_dma_map(use_dma_map) {
  m_wait = [](kmd_region& r) {
    if (r.in_flight)
      throw std::logic_error("free callback with DMA in flight and no way to wait for it");
  };
  m_importer_ops.allow_peer2peer = true;
  m_importer_ops.move_notify = move_notify;
}

kmd::~kmd() = default;

int kmd::pin(uint64_t address, uint64_t size, kmd_region** out) {
  if (!size || !out) return -EINVAL;
  // The range rounded out to 64 KiB must not wrap around 2^64 (the guide's sample would
  // compute a wrapped pin_size and pin something else).
  if (size > ~uint64_t(0) - address || address + size > ~uint64_t(0) - gpu_bound_offset)
    return -EINVAL;
  // do proper alignment, as required by the NVIDIA kernel driver (guide 6.2)
  uint64_t virt_start = address & gpu_bound_mask;
  uint64_t pin_size = (address + size - virt_start + gpu_bound_size - 1) & gpu_bound_mask;
  auto r = std::make_unique<kmd_region>();
  r->va = virt_start;
  r->size = pin_size;
  r->requested = size;
  r->owner = this;
  r->pid = kernel::current_pid();
  r->id = m_next_id++;
  int ret =
      nvidia_p2p_get_pages(0, 0, virt_start, pin_size, &r->page_table, free_callback, r.get());
  if (ret == 0 && m_use_dma_map) {
    ret = nvidia_p2p_dma_map_pages(m_device, r->page_table, &r->dma_mapping);
    if (ret) nvidia_p2p_put_pages(0, 0, virt_start, r->page_table);
  }
  if (ret) {
    ++m_stats.pin_failures;
    return ret;
  }
  ++m_stats.pins;
  *out = r.get();
  m_regions.push_back(std::move(r));
  return 0;
}

int kmd::pin_host(uint64_t address, uint64_t size, kmd_region** out) {
  if (!size || !out || size > ~uint64_t(0) - address) return -EINVAL;
  auto& memory = kernel::current_os().memory();
  const void* p = reinterpret_cast<const void*>(uintptr_t(address));
  auto r = std::make_unique<kmd_region>();
  r->va = address;
  r->size = r->requested = size;
  r->owner = this;
  r->pid = kernel::current_pid();
  r->id = m_next_id++;
  r->host = true;
  std::vector<kernel::bus_run> runs;
  int ret = memory.pin(r->pid, p, size, runs);
  iommu::iommu_domain* domain = m_device ? m_device->iommu : nullptr;
  const bool translate = domain && domain->mode() == iommu::iommu_mode::translating;
  for (const auto& run : runs) {
    if (ret) break;
    if (!translate) {
      r->device_runs.push_back(run);
      continue;
    }
    auto iova = domain->map(run.bus, run.bytes);  // dma_map_page, both directions
    if (!iova) {
      ret = -ENOMEM;
      break;
    }
    r->iommu_maps.push_back({*iova, run.bytes});
    r->device_runs.push_back({*iova, run.bytes});
  }
  if (ret) {
    for (const auto& m : r->iommu_maps) domain->unmap(m.bus, m.bytes);
    if (!runs.empty()) memory.unpin(p, size);
    ++m_stats.pin_failures;
    return ret;
  }
  ++m_stats.pins;
  *out = r.get();
  m_regions.push_back(std::move(r));
  return 0;
}

int kmd::import_dma_buf(int fd, uint64_t address, kmd_region** out) {
  if (!out) return -EINVAL;
  kernel::dma_buf* buf = dma_buf_get(fd);
  if (IS_ERR(buf)) return int(PTR_ERR(buf));
  if (buf->size > ~uint64_t(0) - address) {
    dma_buf_put(buf);
    return -EINVAL;
  }
  auto r = std::make_unique<kmd_region>();
  r->va = address;
  r->size = r->requested = buf->size;
  r->owner = this;
  r->pid = kernel::current_pid();
  r->id = m_next_id++;
  r->dmabuf = buf;
  int ret = 0;
  r->attachment = dma_buf_dynamic_attach(buf, m_device, &m_importer_ops, r.get());
  if (IS_ERR(r->attachment)) {
    ret = int(PTR_ERR(r->attachment));
    r->attachment = nullptr;
  } else {
    r->sgt = dma_buf_map_attachment(r->attachment, kernel::DMA_BIDIRECTIONAL);
    if (IS_ERR(r->sgt)) {
      ret = int(PTR_ERR(r->sgt));
      r->sgt = nullptr;
    }
  }
  if (ret) {
    release_dma_buf(*r);
    ++m_stats.pin_failures;
    return ret;
  }
  for (const auto& seg : r->sgt->segments) r->device_runs.push_back({seg.address, seg.length});
  ++m_stats.pins;
  *out = r.get();
  m_regions.push_back(std::move(r));
  return 0;
}

void kmd::release_dma_buf(kmd_region& r) {
  if (r.sgt) dma_buf_unmap_attachment(r.attachment, r.sgt, kernel::DMA_BIDIRECTIONAL);
  if (r.attachment) dma_buf_detach(r.dmabuf, r.attachment);
  dma_buf_put(r.dmabuf);
  r.sgt = nullptr;
  r.attachment = nullptr;
  r.dmabuf = nullptr;
}

void kmd::move_notify(kernel::dma_buf_attachment* attach) {
  auto* r = static_cast<kmd_region*>(attach->importer_priv);
  kmd& k = *r->owner;
  ++k.m_stats.callbacks;
  if (r->in_flight) ++k.m_stats.waited_callbacks;
  k.m_wait(*r);
  r->invalidated = true;
  r->device_runs.clear();
}

int kmd::unpin(kmd_region* r) {
  // The pointer is only compared until it is known to be one of ours: a stale one must not be
  // read.
  auto it =
      std::find_if(m_regions.begin(), m_regions.end(), [&](const auto& p) { return p.get() == r; });
  if (it == m_regions.end()) return -EINVAL;
  // A region belongs to the process that pinned it (its open file of the device): another
  // process's unpin would reach nvidia_p2p_put_pages from the wrong process, which releases
  // nothing (guide 6.3), and forget a region that is still pinned.
  if (r->pid != kernel::current_pid()) return -EINVAL;
  if (r->invalidated) return -EINVAL;  // revoked: its page table is gone (6.4); see forget()
  if (r->dmabuf) {
    release_dma_buf(*r);
    ++m_stats.unpins;
    m_regions.erase(it);
    return 0;
  }
  if (r->host) {
    for (const auto& m : r->iommu_maps) m_device->iommu->unmap(m.bus, m.bytes);
    kernel::current_os().memory().unpin(reinterpret_cast<const void*>(uintptr_t(r->va)), r->size);
    ++m_stats.unpins;
    m_regions.erase(it);
    return 0;
  }
  if (r->dma_mapping) nvidia_p2p_dma_unmap_pages(m_device, r->page_table, r->dma_mapping);
  int ret = nvidia_p2p_put_pages(0, 0, r->va, r->page_table);
  if (ret == 0) {
    ++m_stats.unpins;
    m_regions.erase(it);
  }
  return ret;
}

kmd_region* kmd::find(uint64_t id) const {
  for (const auto& r : m_regions)
    if (r->id == id) return r.get();
  return nullptr;
}

int kmd::forget(kmd_region* r) {
  if (!r || !r->invalidated) return -EINVAL;
  auto it =
      std::find_if(m_regions.begin(), m_regions.end(), [&](const auto& p) { return p.get() == r; });
  if (it == m_regions.end()) return -EINVAL;
  if (r->dmabuf) release_dma_buf(*r);  // revoked by move_notify: the reference is still held
  m_regions.erase(it);
  return 0;
}

int kmd::dma_segments(const kmd_region& r, uint64_t address, uint64_t length, uint64_t local_offset,
                      std::vector<bus_segment>& out) const {
  if (r.invalidated || !length || address < r.va || address - r.va > r.size ||
      length > r.size - (address - r.va))
    return -EINVAL;
  if (r.host || r.dmabuf) {  // the device's runs, from va on
    uint64_t skip = address - r.va;
    for (const auto& run : r.device_runs) {
      if (skip >= run.bytes) {
        skip -= run.bytes;
        continue;
      }
      const uint64_t n = std::min(run.bytes - skip, length);
      out.push_back({run.bus + skip, n, local_offset});
      local_offset += n;
      length -= n;
      skip = 0;
      if (!length) break;
    }
    return 0;
  }
  const uint64_t page = gpu_bound_size;  // the page table's 64 KiB pages
  uint64_t a = address, end = address + length;
  while (a < end) {
    uint64_t index = (a - r.va) / page;
    uint64_t base = r.dma_mapping ? r.dma_mapping->dma_addresses[index]
                                  : r.page_table->pages[index]->physical_address;
    uint64_t n = std::min(end, (a / page + 1) * page) - a;
    uint64_t bus = base + a % page;
    if (!out.empty() && out.back().bus_address + out.back().length == bus)
      out.back().length += n;  // contiguous BAR1 pages: one descriptor
    else
      out.push_back({bus, n, local_offset});
    local_offset += n;
    a += n;
  }
  return 0;
}

void kmd::free_callback(void* data) {
  auto* r = static_cast<kmd_region*>(data);
  kmd& k = *r->owner;
  ++k.m_stats.callbacks;
  if (r->in_flight) ++k.m_stats.waited_callbacks;
  k.m_wait(*r);  // wait_for_pending_transfers(state) (guide 6.4)
  r->invalidated = true;
  if (r->dma_mapping) nvidia_p2p_free_dma_mapping(r->dma_mapping);
  nvidia_p2p_free_page_table(r->page_table);
}

}  // namespace p2psim::peer
