// nv-p2p pinning in the NVIDIA driver model: get / put pages, the free callback, page-table
// and DMA-mapping life cycles (GPUDirect RDMA 13.3, 4.2, 5.1-5.6, 6.2-6.4, 7.3). What each call
// returns follows docs/driver-model.md: the R535+ driver tolerates late and foreign release
// calls (returns 0), so the model records them as events instead of failing them.
#include <fmt/format.h>

#include <algorithm>

#include "models/driver/nvidia/nvidia_driver.h"
#include "models/driver/nvidia/pin.h"
#include "models/iommu/iommu.h"

namespace p2psim::nv {

namespace {
constexpr size_t quarantine_size = 4096;  // dead page tables kept so late calls are recognised
}

nvidia_driver::pin* nvidia_driver::live_pin(const nvidia_p2p_page_table_t* t) const {
  auto it = m_pin_of.find(t);
  return it == m_pin_of.end() ? nullptr : m_pins.at(it->second).get();
}

bool nvidia_driver::recently_dead(const nvidia_p2p_page_table_t* t) const {
  return std::any_of(m_quarantine.begin(), m_quarantine.end(),
                     [&](const auto& p) { return &p->table == t; });
}

int nvidia_driver::get_pages(uint64_t p2p_token, uint32_t va_space_token, uint64_t va,
                             uint64_t length, nvidia_p2p_page_table_t** table, void (*cb)(void*),
                             void* data, bool persistent) {
  const char* fn = persistent ? "nvidia_p2p_get_pages_persistent" : "nvidia_p2p_get_pages";
  bool legacy = false;  // persistent by a NULL callback: before R535, put_pages released it
  if (!table) return refuse(EINVAL, fn, "page_table is NULL");
  if (!persistent && !cb) {
    if (!m_config.accept_null_callback)  // R535 and later (guide 4.2)
      return refuse(EINVAL, fn, "NULL free_callback: use nvidia_p2p_get_pages_persistent");
    persistent = legacy = true;
  }
  if (va % gpu_page_bytes || length % gpu_page_bytes)
    return refuse(
        EINVAL, fn,
        fmt::format("address 0x{:x} and length 0x{:x} must be 64 KiB aligned", va, length));
  if (length == 0) return refuse(EINVAL, fn, "length is 0");
  if (va + length < va)
    return refuse(EINVAL, fn, fmt::format("0x{:x} + 0x{:x} wraps around 2^64", va, length));

  // Whose address space: the tokens' context (guide 5.6), else the calling process's.
  kernel::pid_t pid = kernel::current_pid();
  int ctx = 0;
  const bool tokens = !persistent && (p2p_token || va_space_token);
  if (tokens) {
    const context* c = context_of_tokens(p2p_token, va_space_token);
    if (!c) return refuse(EINVAL, fn, "no live context has these tokens");
    pid = c->pid;
    ctx = c->id;
  }
  // Every page must hold live memory of one context (and so of one GPU). Another process's
  // memory is simply not in this address space: -EINVAL, as the real driver, which looks only
  // at the calling process's VA spaces, answers (docs/driver-model.md).
  auto not_live = [&] {
    return refuse(
        EINVAL, fn,
        fmt::format("0x{:x}+0x{:x} is not all live GPU memory of process {}", va, length, pid));
  };
  auto pit = m_processes.find(pid);  // looked up, not created: a stray pid leaves nothing
  if (pit == m_processes.end()) return not_live();
  process_state& ps = pit->second;
  std::vector<va_page*> pages;
  for (uint64_t p = va / gpu_page_bytes; p < va / gpu_page_bytes + length / gpu_page_bytes; ++p) {
    auto it = ps.pages.find(p);
    if (it == ps.pages.end() || it->second.allocations == 0) return not_live();
    // VMM memory is the process's, any context of it may pin it, if it was made for RDMA
    // (gdrcopy #257: nv-p2p pins cuMemCreate memory "provided that the allocation has the
    // gpudirect rdma flag set").
    if (it->second.ctx == 0 && !m_vmm.at(ps.mappings.at(vmm_base(ps, p)).memory).rdma_capable)
      return refuse(EINVAL, fn, "VMM memory created without gpuDirectRDMACapable");
    // Another process's memory opened by CUDA IPC: its IS_GPU_DIRECT_RDMA_CAPABLE is 0.
    if (it->second.imported)
      return refuse(EINVAL, fn, "memory of another process, opened by cuIpcOpenMemHandle");
    if (ctx && it->second.ctx != ctx && it->second.ctx != 0)
      return refuse(EINVAL, fn, "the range is not all in the tokens' context");
    if (!pages.empty() && it->second.ctx != pages.front()->ctx)
      return refuse(EINVAL, fn, "the range spans two contexts");
    pages.push_back(&it->second);
  }
  const int g = pages.front()->gpu;
  gpu_state& gs = m_gpus[g];
  // BAR1 space in 64 KiB pages; all or nothing (-ENOMEM leaves no partial mapping).
  std::vector<uint64_t> frames;
  for (const va_page* p : pages) frames.push_back(p->frame);
  const uint64_t needed = bar1_pages_needed(gs, frames);
  if (needed > gs.res.bar1->free_pages()) {
    ++gs.bar1_exhausted;
    ++m_counters.bar1_exhausted;
    return refuse(ENOMEM, fn,
                  fmt::format("BAR1 of {} exhausted: {} pages needed, {} free", gs.res.name, needed,
                              gs.res.bar1->free_pages()));
  }

  auto p = std::make_unique<pin>();
  p->id = m_next_pin++;
  p->caller = kernel::current_pid();
  p->memory_pid = pid;
  p->ctx = pages.front()->ctx ? pages.front()->ctx : ctx;  // VMM: the tokens' context
  p->gpu = g;
  p->va = va;
  p->length = length;
  p->persistent = persistent;
  p->legacy = legacy;
  p->callback = cb;
  p->data = data;
  p->uuid = gs.res.uuid;
  for (va_page* page : pages) {
    const uint64_t f = page->frame;
    const uint64_t b = map_bar1(gs, f);
    gs.frames.hold(f);
    if (!persistent) page->pins.push_back(p->id);
    p->frames.push_back(f);
    p->bar1_pages.push_back(b);
  }
  p->pages.resize(pages.size());
  for (size_t i = 0; i < pages.size(); ++i) {
    p->pages[i].physical_address = gs.res.bar1_bus_base + p->bar1_pages[i] * gpu_page_bytes;
    p->page_ptrs.push_back(&p->pages[i]);
  }
  p->table.version = NVIDIA_P2P_PAGE_TABLE_VERSION;
  p->table.page_size = NVIDIA_P2P_PAGE_SIZE_64KB;
  p->table.pages = p->page_ptrs.data();
  p->table.entries = uint32_t(pages.size());
  p->table.gpu_uuid = p->uuid.data();
  *table = &p->table;
  m_pin_of[&p->table] = p->id;
  m_pins[p->id] = std::move(p);

  ++m_counters.pins;
  if (persistent) ++m_counters.persistent_pins;
  double cost = m_config.pin_base_ns + m_config.pin_page_ns * double(pages.size());
  charge(cost);
  return 0;
}

uint64_t nvidia_driver::bar1_pages_needed(const gpu_state& gs,
                                          const std::vector<uint64_t>& frames) const {
  uint64_t needed = 0;
  for (uint64_t f : frames) needed += !(m_config.share_bar1 && gs.bar1_of.count(f));
  return needed;
}

uint64_t nvidia_driver::map_bar1(gpu_state& gs, uint64_t frame) {
  if (m_config.share_bar1)
    if (auto it = gs.bar1_of.find(frame); it != gs.bar1_of.end()) {
      ++it->second.second;
      return it->second.first;
    }
  const uint64_t b = *gs.res.bar1->find_free(1);
  gs.res.bar1->map(b, 1, frame * gpu_page_bytes);
  if (m_config.share_bar1) gs.bar1_of[frame] = {b, 1};
  m_counters.bar1_pages_peak = std::max(m_counters.bar1_pages_peak, gs.res.bar1->mapped_pages());
  return b;
}

void nvidia_driver::unmap_bar1(gpu_state& gs, uint64_t frame, uint64_t bar1_page) {
  if (m_config.share_bar1) {
    auto& [b, refs] = gs.bar1_of.at(frame);
    if (--refs > 0) return;  // still shared with another pin or mapping (guide 4.7)
    gs.bar1_of.erase(frame);
  }
  gs.res.bar1->unmap(bar1_page, 1);
}

// Unmaps what the pin mapped, lets go of its frames, drops it from the indexes and keeps its
// memory in quarantine: the table pointer is dead from here on.
void nvidia_driver::end_pin(pin& p) {
  gpu_state& gs = m_gpus[p.gpu];
  for (auto& m : p.mappings) {
    if (m->translated && m->peer && m->peer->iommu)
      for (uint64_t a : m->addresses) m->peer->iommu->unmap(a, gpu_page_bytes);
    m_mapping_owner.erase(&m->mapping);
  }
  // A persistent pin may outlive its process (process_exit forgets the process): it has no
  // VA pages to leave.
  auto pit = p.persistent ? m_processes.end() : m_processes.find(p.memory_pid);
  for (size_t i = 0; i < p.frames.size(); ++i) {
    const uint64_t f = p.frames[i];
    unmap_bar1(gs, f, p.bar1_pages[i]);
    if (pit != m_processes.end()) {
      auto page = pit->second.pages.find(p.va / gpu_page_bytes + i);
      if (page != pit->second.pages.end()) std::erase(page->second.pins, p.id);
    }
    gs.frames.let_go(f);
  }
  m_pin_of.erase(&p.table);
  auto it = m_pins.find(p.id);
  m_quarantine.push_back(std::move(it->second));
  m_pins.erase(it);
  if (m_quarantine.size() > quarantine_size) m_quarantine.pop_front();
}

void nvidia_driver::revoke(uint64_t id, const std::string& why) {
  auto it = m_pins.find(id);
  if (it == m_pins.end() || it->second->st != pin::state::live) return;  // went meanwhile
  pin& p = *it->second;
  ++m_counters.callbacks;
  note("free callback", fmt::format("{}: pin 0x{:x}+0x{:x}", why, p.va, p.length));
  p.st = pin::state::in_callback;
  p.callback(p.data);  // synchronous (guide 5.3); the freeing process stays current
  // Only now, after the callback returned, is the mapping torn down (guide 5.3), and the
  // driver frees the page table and its DMA mappings itself (nv-p2p.c, R535+).
  end_pin(p);
}

int nvidia_driver::put_pages(uint64_t p2p_token, uint32_t va_space_token, uint64_t va,
                             nvidia_p2p_page_table_t* table) {
  const char* fn = "nvidia_p2p_put_pages";
  if (!table) return 0;
  pin* p = live_pin(table);
  if (!p)
    return tolerate(fn, recently_dead(table)
                            ? "late: the pin was already revoked or released (returns 0, 4.2)"
                            : "not a page table from nvidia_p2p_get_pages (returns 0)");
  if (p->persistent && !p->legacy)
    return tolerate(fn,
                    "a persistent page table: nothing released; use "
                    "nvidia_p2p_put_pages_persistent");
  if (p->st == pin::state::in_callback)
    return tolerate(fn,
                    "inside its own free callback: already being torn down; the callback "
                    "must call nvidia_p2p_free_page_table (guide 5.3)");
  // The driver looks the table up in the tokens' VA space, or the calling process's.
  if (p2p_token || va_space_token) {
    const context* c = context_of_tokens(p2p_token, va_space_token);
    if (!c || c->id != p->ctx)
      return tolerate(fn, "tokens of no live context holding this pin: nothing released");
  } else if (kernel::current_pid() != p->memory_pid) {
    return tolerate(fn, fmt::format("process {} releases a pin of process {}'s memory without "
                                    "tokens: nothing released (guide 6.3)",
                                    kernel::current_pid(), p->memory_pid));
  }
  if (va != p->va)
    tolerate(fn, fmt::format("virtual_address 0x{:x} differs from the pinned 0x{:x} (released "
                             "anyway: the table is the key)",
                             va, p->va));
  end_pin(*p);
  ++m_counters.unpins;
  charge(m_config.unpin_base_ns);
  return 0;
}

int nvidia_driver::put_pages_persistent(uint64_t va, nvidia_p2p_page_table_t* table) {
  const char* fn = "nvidia_p2p_put_pages_persistent";
  if (!table) return 0;
  pin* p = live_pin(table);
  if (!p || !p->persistent)
    return refuse(EINVAL, fn,
                  p ? "not a persistent page table"
                    : "not a live page table (the real driver would dereference it)");
  if (va != p->va)
    tolerate(fn, fmt::format("virtual_address 0x{:x} differs from the pinned 0x{:x}", va, p->va));
  end_pin(*p);
  ++m_counters.unpins;
  charge(m_config.unpin_base_ns);
  return 0;
}

// A no-op since R535 (nv-p2p.c): the driver frees the table after the callback returns.
int nvidia_driver::free_page_table(nvidia_p2p_page_table_t* table) {
  const pin* p = table ? live_pin(table) : nullptr;
  if (p && p->st == pin::state::live)
    tolerate("nvidia_p2p_free_page_table",
             "outside a free callback: the mapping stays; use nvidia_p2p_put_pages");
  return 0;
}

int nvidia_driver::dma_map_pages(pci_dev* peer, nvidia_p2p_page_table_t* table,
                                 nvidia_p2p_dma_mapping_t** mapping) {
  const char* fn = "nvidia_p2p_dma_map_pages";
  if (!peer || !table || !mapping) return refuse(EINVAL, fn, "peer, table or dma_mapping is NULL");
  pin* p = live_pin(table);
  if (!p || p->st != pin::state::live) return refuse(EINVAL, fn, "not a live page table");
  auto m = std::make_unique<dma_mapping_record>();
  m->peer = peer;
  m->translated = peer->iommu && peer->iommu->mode() == iommu::iommu_mode::translating;
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
  m_mapping_owner[&m->mapping] = p->id;
  p->mappings.push_back(std::move(m));
  return 0;
}

int nvidia_driver::dma_unmap_pages(pci_dev* peer, nvidia_p2p_page_table_t* table,
                                   nvidia_p2p_dma_mapping_t* mapping) {
  const char* fn = "nvidia_p2p_dma_unmap_pages";
  if (!peer || !table || !mapping) return refuse(EINVAL, fn, "peer, table or dma_mapping is NULL");
  pin* p = live_pin(table);
  if (!p) return tolerate(fn, "late: the page table was revoked or released (returns 0)");
  if (p->st == pin::state::in_callback)
    return tolerate(fn, "inside the free callback: the driver unmaps after it returns");
  auto it = std::find_if(p->mappings.begin(), p->mappings.end(),
                         [&](const auto& m) { return &m->mapping == mapping; });
  if (it == p->mappings.end())
    return tolerate(fn, "not a DMA mapping of this page table (already unmapped?)");
  dma_mapping_record& m = **it;
  if (m.peer != peer)
    tolerate(fn, fmt::format("mapped for {}, unmapped for {} (unmapped anyway)", m.peer->name,
                             peer->name));
  if (m.translated)
    for (uint64_t a : m.addresses) m.peer->iommu->unmap(a, gpu_page_bytes);
  m_mapping_owner.erase(mapping);
  // Kept a while, as dead page tables are: a late unmap with this pointer must not find a
  // newer mapping that took its memory.
  m_dead_mappings.push_back(std::move(*it));
  if (m_dead_mappings.size() > quarantine_size) m_dead_mappings.pop_front();
  p->mappings.erase(it);
  return 0;
}

// A no-op since R535 (nv-p2p.c): the driver frees the mappings after the callback returns.
int nvidia_driver::free_dma_mapping(nvidia_p2p_dma_mapping_t* mapping) {
  auto it = mapping ? m_mapping_owner.find(mapping) : m_mapping_owner.end();
  if (it != m_mapping_owner.end() && m_pins.at(it->second)->st == pin::state::live)
    tolerate("nvidia_p2p_free_dma_mapping",
             "outside a free callback: the mapping stays; use nvidia_p2p_dma_unmap_pages");
  return 0;
}

}  // namespace p2psim::nv
