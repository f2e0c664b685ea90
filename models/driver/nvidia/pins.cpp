// nv-p2p pinning in the NVIDIA driver model: get / put pages, the free callback, page-table
// and DMA-mapping life cycles (GPUDirect RDMA 13.3, 5.1-5.6, 6.2-6.4, 7.3).
#include <fmt/format.h>

#include "models/driver/nvidia/nvidia_driver.h"
#include "models/driver/nvidia/pin.h"
#include "models/iommu/iommu.h"

namespace p2psim::nv {

nvidia_driver::pin* nvidia_driver::live_pin(nvidia_p2p_page_table_t* t) {
  for (auto& p : m_pins)
    if (&p->table == t && (p->st == pin::state::live || p->st == pin::state::in_callback))
      return p.get();
  return nullptr;
}

int nvidia_driver::get_pages(uint64_t p2p_token, uint32_t va_space_token, uint64_t va,
                             uint64_t length, nvidia_p2p_page_table_t** table, void (*cb)(void*),
                             void* data, bool persistent) {
  const char* fn = persistent ? "nvidia_p2p_get_pages_persistent" : "nvidia_p2p_get_pages";
  if (!table) return refuse(EINVAL, fn, "page_table is NULL");
  if (!persistent && !cb) {
    if (!m_config.accept_null_callback)  // R535 and later (guide 4.2)
      return refuse(EINVAL, fn, "NULL free_callback: use nvidia_p2p_get_pages_persistent");
    persistent = true;
  }
  if (length == 0) return refuse(EINVAL, fn, "length is 0");
  if (va % gpu_page_bytes || length % gpu_page_bytes)
    return refuse(
        EINVAL, fn,
        fmt::format("address 0x{:x} and length 0x{:x} must be 64 KiB aligned", va, length));

  // Whose address space: the tokens' (guide 5.6), else the calling process's.
  kernel::pid_t pid = kernel::current_pid();
  const bool tokens = !persistent && (p2p_token || va_space_token);
  if (tokens) {
    const context* found = nullptr;
    for (const auto& [id, c] : m_contexts)
      if (c.alive && c.p2p_token == p2p_token && c.va_space_token == va_space_token) found = &c;
    if (!found) return refuse(EINVAL, fn, "no VA space has these tokens");
    pid = found->pid;
  }
  process_state& ps = process(pid);
  int gpu = -1;
  std::vector<uint64_t> vram;
  for (uint64_t p = va / gpu_page_bytes; p < (va + length) / gpu_page_bytes; ++p) {
    auto it = ps.pages.find(p);
    if (it == ps.pages.end() || it->second.allocations == 0) {
      // Without tokens only the owner may pin (guide 5.6): someone else's memory is -EPERM.
      if (!tokens)
        for (auto& [other, ops] : m_processes)
          if (other != pid && ops.pages.count(p) && ops.pages.at(p).allocations)
            return refuse(
                EPERM, fn,
                fmt::format("0x{:x} belongs to process {}, and no tokens were given", va, other));
      return refuse(EINVAL, fn, fmt::format("0x{:x}+0x{:x} is not all GPU memory", va, length));
    }
    if (gpu >= 0 && it->second.gpu != gpu) return refuse(EINVAL, fn, "the range spans two GPUs");
    gpu = it->second.gpu;
    vram.push_back(it->second.vram_page);
  }
  gpu_state& gs = m_gpus[gpu];
  // BAR1 space in 64 KiB pages; all or nothing (-ENOMEM leaves no partial mapping).
  uint64_t needed = 0;
  for (uint64_t v : vram) needed += !(m_config.share_bar1 && gs.shared.count(v));
  if (needed > gs.res.bar1->free_pages()) {
    ++gs.bar1_exhausted;
    ++m_counters.bar1_exhausted;
    return refuse(ENOMEM, fn,
                  fmt::format("BAR1 of {} exhausted: {} pages needed, {} free", gs.res.name, needed,
                              gs.res.bar1->free_pages()));
  }

  auto p = std::make_unique<pin>();
  p->caller = kernel::current_pid();
  p->memory_pid = pid;
  p->p2p_token = p2p_token;
  p->va_space_token = va_space_token;
  p->gpu = gpu;
  p->va = va;
  p->length = length;
  p->persistent = persistent;
  p->callback = cb;
  p->data = data;
  p->uuid = gs.res.uuid;
  p->vram_pages = vram;
  for (uint64_t v : vram) {
    uint64_t b;
    if (m_config.share_bar1 && gs.shared.count(v)) {
      b = gs.shared[v].first;
      ++gs.shared[v].second;
    } else {
      b = *gs.res.bar1->find_free(1);
      gs.res.bar1->map(b, 1, v * gpu_page_bytes);
      if (m_config.share_bar1) gs.shared[v] = {b, 1};
    }
    p->bar1_pages.push_back(b);
  }
  p->pages.resize(vram.size());
  for (size_t i = 0; i < vram.size(); ++i) {
    p->pages[i].physical_address = gs.res.bar1_bus_base + p->bar1_pages[i] * gpu_page_bytes;
    p->page_ptrs.push_back(&p->pages[i]);
  }
  p->table.version = NVIDIA_P2P_PAGE_TABLE_VERSION;
  p->table.page_size = NVIDIA_P2P_PAGE_SIZE_64KB;
  p->table.pages = p->page_ptrs.data();
  p->table.entries = uint32_t(vram.size());
  p->table.gpu_uuid = p->uuid.data();
  if (persistent)
    for (uint64_t q = va / gpu_page_bytes; q < (va + length) / gpu_page_bytes; ++q)
      ++ps.pages[q].pins;
  *table = &p->table;
  m_pins.push_back(std::move(p));

  ++m_counters.pins;
  if (persistent) ++m_counters.persistent_pins;
  double cost = m_config.pin_base_ns + m_config.pin_page_ns * double(vram.size());
  m_counters.pin_ns += cost;
  m_elapsed_ns += cost;
  m_counters.bar1_pages_peak = std::max(m_counters.bar1_pages_peak, gs.res.bar1->mapped_pages());
  return 0;
}

void nvidia_driver::release_bar1(pin& p) {
  gpu_state& gs = m_gpus[p.gpu];
  for (size_t i = 0; i < p.bar1_pages.size(); ++i) {
    if (m_config.share_bar1) {
      auto& [b, refs] = gs.shared.at(p.vram_pages[i]);
      if (--refs > 0) continue;  // still shared with another pin: stays mapped (guide 4.7)
      gs.shared.erase(p.vram_pages[i]);
    }
    gs.res.bar1->unmap(p.bar1_pages[i], 1);
  }
  for (auto& m : p.mappings)
    if (m->translated && !m->released && m->peer && m->peer->iommu)
      for (uint64_t a : m->addresses) m->peer->iommu->unmap(a, gpu_page_bytes);
}

int nvidia_driver::put_pages(uint64_t p2p_token, uint32_t va_space_token, uint64_t va,
                             nvidia_p2p_page_table_t* table, bool persistent) {
  const char* fn = persistent ? "nvidia_p2p_put_pages_persistent" : "nvidia_p2p_put_pages";
  pin* p = live_pin(table);
  if (!p)
    return refuse(EINVAL, fn,
                  table ? "use of a page table that was already freed or never "
                          "came from nvidia_p2p_get_pages"
                        : "page_table is NULL");
  if (p->persistent != persistent)
    return refuse(EINVAL, fn, persistent ? "not a persistent mapping" : "a persistent mapping");
  if (p->st == pin::state::in_callback)
    return refuse(EINVAL, fn,
                  "called from inside the free callback: the callback must call "
                  "nvidia_p2p_free_page_table (guide 5.3)");
  if (!persistent && kernel::current_pid() != p->caller)
    return refuse(EPERM, fn,
                  fmt::format("process {} releases a pin made by process {} (guide 6.3)",
                              kernel::current_pid(), p->caller));
  if (va != p->va) return refuse(EINVAL, fn, "virtual_address differs from the pinned one");
  if (!persistent && (p2p_token != p->p2p_token || va_space_token != p->va_space_token))
    return refuse(EINVAL, fn, "tokens differ from the ones used to pin");
  release_bar1(*p);
  p->st = pin::state::released;
  p->table_freed = true;
  if (persistent) {
    process_state& ps = process(p->memory_pid);
    for (uint64_t q = p->va / gpu_page_bytes; q < (p->va + p->length) / gpu_page_bytes; ++q) {
      --ps.pages[q].pins;
      release_va_page(ps, q);
    }
  }
  ++m_counters.unpins;
  m_counters.pin_ns += m_config.unpin_base_ns;
  m_elapsed_ns += m_config.unpin_base_ns;
  return 0;
}

void nvidia_driver::revoke(pin& p, const std::string& why) {
  ++m_counters.callbacks;
  note("free callback", fmt::format("{} of 0x{:x}+0x{:x}", why, p.va, p.length));
  p.st = pin::state::in_callback;
  p.callback(p.data);  // synchronous (guide 5.3); the caller's process stays current
  if (!p.table_freed)
    note("page table leaked", "the free callback returned without nvidia_p2p_free_page_table");
  for (auto& m : p.mappings)
    if (!m->released) note("DMA mapping leaked", "the free callback did not free a DMA mapping");
  // Only now, after the callback returned, is the mapping torn down (guide 5.3).
  release_bar1(p);
  p.st = pin::state::revoked;
}

int nvidia_driver::free_page_table(nvidia_p2p_page_table_t* table) {
  const char* fn = "nvidia_p2p_free_page_table";
  for (auto& p : m_pins) {
    if (&p->table != table) continue;
    if (p->table_freed) return refuse(EINVAL, fn, "page table freed twice");
    if (p->st == pin::state::live)
      return refuse(EINVAL, fn,
                    "the mapping is live: use nvidia_p2p_put_pages (only the free "
                    "callback frees the table)");
    p->table_freed = true;
    return 0;
  }
  return refuse(EINVAL, fn, table ? "not a page table from nvidia_p2p_get_pages" : "NULL");
}

int nvidia_driver::dma_map_pages(pci_dev* peer, nvidia_p2p_page_table_t* table,
                                 nvidia_p2p_dma_mapping_t** mapping) {
  const char* fn = "nvidia_p2p_dma_map_pages";
  if (!peer || !mapping) return refuse(EINVAL, fn, "peer or dma_mapping is NULL");
  pin* p = live_pin(table);
  if (!p || p->st != pin::state::live) return refuse(EINVAL, fn, "not a live page table");
  auto m = std::make_unique<dma_mapping_record>();
  m->peer = peer;
  m->translated = peer->iommu && peer->iommu->what() == iommu::mode::translating;
  for (const auto& page : p->pages) {
    uint64_t a = page.physical_address;
    if (m->translated) {
      auto iova = peer->iommu->map(a, gpu_page_bytes);
      if (!iova) {
        for (uint64_t done : m->addresses) peer->iommu->unmap(done, gpu_page_bytes);
        return refuse(ENOMEM, fn, "the peer's IOVA space is full");
      }
      a = *iova;
    }
    m->addresses.push_back(a);
  }
  m->mapping.version = NVIDIA_P2P_DMA_MAPPING_VERSION;
  m->mapping.page_size_type = NVIDIA_P2P_PAGE_SIZE_64KB;
  m->mapping.entries = uint32_t(m->addresses.size());
  m->mapping.dma_addresses = m->addresses.data();
  m->mapping.pci_dev = peer;
  *mapping = &m->mapping;
  p->mappings.push_back(std::move(m));
  return 0;
}

int nvidia_driver::dma_unmap_pages(pci_dev* peer, nvidia_p2p_page_table_t* table,
                                   nvidia_p2p_dma_mapping_t* mapping) {
  const char* fn = "nvidia_p2p_dma_unmap_pages";
  pin* p = live_pin(table);
  if (!p) return refuse(EINVAL, fn, "not a live page table");
  if (p->st == pin::state::in_callback)
    return refuse(EINVAL, fn,
                  "called from inside the free callback: use "
                  "nvidia_p2p_free_dma_mapping (guide 7.3)");
  for (auto& m : p->mappings) {
    if (&m->mapping != mapping) continue;
    if (m->released || m->peer != peer) break;
    if (m->translated)
      for (uint64_t a : m->addresses) peer->iommu->unmap(a, gpu_page_bytes);
    m->released = true;
    return 0;
  }
  return refuse(EINVAL, fn, "not a live DMA mapping of this page table and peer");
}

int nvidia_driver::free_dma_mapping(nvidia_p2p_dma_mapping_t* mapping) {
  const char* fn = "nvidia_p2p_free_dma_mapping";
  for (auto& p : m_pins)
    for (auto& m : p->mappings) {
      if (&m->mapping != mapping) continue;
      if (m->released) return refuse(EINVAL, fn, "DMA mapping freed twice");
      if (p->st != pin::state::in_callback)
        return refuse(EINVAL, fn,
                      "only from the free callback; otherwise use "
                      "nvidia_p2p_dma_unmap_pages");
      if (m->translated)  // the I/O mappings go now (the real driver may defer it)
        for (uint64_t a : m->addresses) m->peer->iommu->unmap(a, gpu_page_bytes);
      m->released = true;
      return 0;
    }
  return refuse(EINVAL, fn, "not a DMA mapping from nvidia_p2p_dma_map_pages");
}

}  // namespace p2psim::nv
