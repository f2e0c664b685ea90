// The nv-p2p.h entry points: thin forwards to the NVIDIA driver loaded into the kernel of the
// simulated OS they are called in (kernel::running_in). The C ABI takes no context argument,
// and a real kernel has one NVIDIA driver, so the calling OS is what names it.
#include "models/driver/nvidia/nv-p2p.h"

#include "models/driver/kernel/kernel.h"
#include "models/driver/nvidia/nvidia_driver.h"

namespace {
p2psim::nv::nvidia_driver& driver() {
  return p2psim::kernel::current_os().nvidia();
}
}  // namespace

int nvidia_p2p_get_pages(uint64_t p2p_token, uint32_t va_space_token, uint64_t virtual_address,
                         uint64_t length, struct nvidia_p2p_page_table** page_table,
                         void (*free_callback)(void* data), void* data) {
  return driver().get_pages(p2p_token, va_space_token, virtual_address, length, page_table,
                            free_callback, data, false);
}

int nvidia_p2p_put_pages(uint64_t p2p_token, uint32_t va_space_token, uint64_t virtual_address,
                         struct nvidia_p2p_page_table* page_table) {
  return driver().put_pages(p2p_token, va_space_token, virtual_address, page_table);
}

int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table* page_table) {
  return driver().free_page_table(page_table);
}

int nvidia_p2p_get_pages_persistent(uint64_t virtual_address, uint64_t length,
                                    struct nvidia_p2p_page_table** page_table, uint32_t flags) {
  if (flags != NVIDIA_P2P_FLAGS_DEFAULT) return -EINVAL;
  return driver().get_pages(0, 0, virtual_address, length, page_table, nullptr, nullptr, true);
}

int nvidia_p2p_put_pages_persistent(uint64_t virtual_address,
                                    struct nvidia_p2p_page_table* page_table, uint32_t flags) {
  if (flags != NVIDIA_P2P_FLAGS_DEFAULT) return -EINVAL;
  return driver().put_pages_persistent(virtual_address, page_table);
}

int nvidia_p2p_dma_map_pages(struct pci_dev* peer, struct nvidia_p2p_page_table* page_table,
                             struct nvidia_p2p_dma_mapping** dma_mapping) {
  return driver().dma_map_pages(peer, page_table, dma_mapping);
}

int nvidia_p2p_dma_unmap_pages(struct pci_dev* peer, struct nvidia_p2p_page_table* page_table,
                               struct nvidia_p2p_dma_mapping* dma_mapping) {
  return driver().dma_unmap_pages(peer, page_table, dma_mapping);
}

int nvidia_p2p_free_dma_mapping(struct nvidia_p2p_dma_mapping* dma_mapping) {
  return driver().free_dma_mapping(dma_mapping);
}
