#include "models/driver/peer/nvidia_peermem.h"

#include <cerrno>

namespace p2psim::peer {

namespace {
constexpr uint64_t gpu_page = 64 * 1024;
}

void* nvidia_peermem::acquire(uint64_t addr, uint64_t size) {
  auto* r = new registration;
  r->client = this;
  r->start = addr & ~(gpu_page - 1);
  r->size = ((addr + size + gpu_page - 1) & ~(gpu_page - 1)) - r->start;
  // A pin of the caller's own memory (zero tokens), released at once: GPU memory, or not mine.
  if (nvidia_p2p_get_pages(0, 0, r->start, r->size, &r->page_table, probe_callback, r) < 0 ||
      nvidia_p2p_put_pages(0, 0, r->start, r->page_table) < 0) {
    delete r;
    return nullptr;
  }
  r->page_table = nullptr;
  return r;
}

int nvidia_peermem::get_pages(void* context, uint64_t ticket) {
  auto* r = static_cast<registration*>(context);
  r->ticket = ticket;
  // The persistent client passes no callback, which nv-p2p refuses since R535 (guide 4.2:
  // "nvidia_p2p_get_pages no longer accepts a NULL callback pointer").
  return nvidia_p2p_get_pages(0, 0, r->start, r->size, &r->page_table,
                              m_persistent ? nullptr : free_callback, r);
}

int nvidia_peermem::dma_map(void* context, pci_dev* dev, std::vector<uint64_t>& pages,
                            uint64_t& page_size) {
  auto* r = static_cast<registration*>(context);
  if (r->page_table->page_size != NVIDIA_P2P_PAGE_SIZE_64KB || !dev) return -EINVAL;
  const int ret = nvidia_p2p_dma_map_pages(dev, r->page_table, &r->dma_mapping);
  if (ret) return ret;
  pages.assign(r->dma_mapping->dma_addresses,
               r->dma_mapping->dma_addresses + r->dma_mapping->entries);
  page_size = gpu_page;
  return 0;
}

int nvidia_peermem::dma_unmap(void* context, pci_dev* dev) {
  auto* r = static_cast<registration*>(context);
  if (r->in_callback || !r->dma_mapping) return 0;
  nvidia_p2p_dma_unmap_pages(dev, r->page_table, r->dma_mapping);
  r->dma_mapping = nullptr;
  return 0;
}

void nvidia_peermem::put_pages(void* context) {
  auto* r = static_cast<registration*>(context);
  if (r->in_callback || !r->page_table) return;
  nvidia_p2p_put_pages(0, 0, r->start, r->page_table);
  r->page_table = nullptr;
}

void nvidia_peermem::release(void* context) {
  delete static_cast<registration*>(context);
}

uint64_t nvidia_peermem::first_page_address(void* context) const {
  return static_cast<const registration*>(context)->start;
}

const nvidia_p2p_page_table_t* nvidia_peermem::page_table_of(const void* context) {
  return static_cast<const registration*>(context)->page_table;
}

const nvidia_p2p_dma_mapping_t* nvidia_peermem::dma_mapping_of(const void* context) {
  return static_cast<const registration*>(context)->dma_mapping;
}

// The NVIDIA driver is taking the memory back: the RDMA core stops the registration first,
// then the mapping and the table are freed here, as the guide's callback does (6.4).
void nvidia_peermem::free_callback(void* data) {
  auto* r = static_cast<registration*>(data);
  r->in_callback = true;
  ++r->client->m_invalidations;
  r->client->m_core.invalidate(r->ticket);
  r->in_callback = false;
  if (r->dma_mapping) nvidia_p2p_free_dma_mapping(r->dma_mapping);
  nvidia_p2p_free_page_table(r->page_table);
  r->dma_mapping = nullptr;
  r->page_table = nullptr;
}

void nvidia_peermem::probe_callback(void* data) {
  nvidia_p2p_free_page_table(static_cast<registration*>(data)->page_table);
}

}  // namespace p2psim::peer
