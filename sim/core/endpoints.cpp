#include "sim/core/endpoints.h"

#include <stdexcept>

namespace p2psim::core {

target_region::target_region(fabric_system& sys, const std::string& name, uint64_t offset,
                             uint64_t bytes, const region_options& o)
    : m_offset(offset) {
  if (auto* g = sys.find_gpu(name); g && !o.map_bar1) {
    // The first usable BAR1 pages, left unmapped: every access is refused.
    m_store = &g->vram();
    m_bus = g->params().bar1.base + g->bar1().reserved() + offset;
  } else if (auto* g = sys.find_gpu(name)) {
    const uint64_t page = gpu::bar1_page_bytes;
    m_pages = (bytes + page - 1) / page;
    auto first = g->bar1().find_free(m_pages);
    if (!first) throw std::runtime_error("BAR1 of " + name + " has no room for the transfer");
    m_gpu = g;
    m_first_page = *first;
    g->bar1().map(m_first_page, m_pages, offset);
    m_store = &g->vram();
    m_bus = g->params().bar1.base + m_first_page * page;
  } else if (auto* d = sys.find_device(name); d && d->exposed().store) {
    m_store = d->exposed().store;
    m_bus = d->exposed().bus_base + offset;
  } else if (auto* rc = sys.find_socket(name)) {
    m_store = &rc->memory();
    m_bus = rc->params().memory.base + offset;
  } else {
    throw std::logic_error("unknown target " + name);
  }
  if (o.iommu && o.iommu->mode() == iommu::iommu_mode::translating && o.iommu_map) {
    auto iova = o.iommu->map(m_bus, bytes, !o.device_writes, o.device_writes);
    if (!iova) {
      if (m_gpu) m_gpu->bar1().unmap(m_first_page, m_pages);
      throw std::runtime_error("the IOMMU has no I/O virtual address space left for " + name);
    }
    m_iommu = o.iommu;
    m_iova = m_bus = *iova;
    m_bytes = bytes;
  }
}

target_region::~target_region() {
  if (m_iommu) m_iommu->unmap(m_iova, m_bytes);
  if (m_gpu) m_gpu->bar1().unmap(m_first_page, m_pages);
}

uint64_t target_capacity(const topo::topology& t, const topo::address_map&,
                         const std::string& name) {
  if (const auto* d = t.find_device(name)) return d->settings->target_bytes();
  if (const auto* s = t.find_socket(name)) return s->memory_bytes;
  return 0;
}

uint64_t initiator_capacity(const topo::topology& t, const std::string& name) {
  const auto* d = t.find_device(name);
  return d && d->kind().initiates_dma() ? d->settings->local_bytes() : 0;
}

}  // namespace p2psim::core
