// nvidia-peermem (guide 6.7; kernel-open/nvidia-peermem in NVIDIA's open kernel modules): the
// peer-memory client that gives RDMA devices GPU memory through nv-p2p. It registers two
// clients with the RDMA core: `nv_mem`, which pins with a free callback, and `nv_mem_nc`,
// which asks nv-p2p for a pin without one (the persistent client). Taking a range:
// `acquire` pins and unpins its 64 KiB-rounded range once, with a callback that only frees
// the table, to learn whether it is GPU memory of the calling process; `get_pages` pins it
// for good; `dma_map` maps it for the device (nvidia_p2p_dma_map_pages). When the NVIDIA
// driver revokes the pin (cuMemFree, cuCtxDestroy, the process's exit: guide 5.3), the free
// callback invalidates the registration in the RDMA core, then frees the DMA mapping and the
// page table itself; unmapping or unpinning inside it does nothing.
#pragma once

#include "models/driver/nvidia/nv-p2p.h"
#include "models/driver/peer/peer_memory.h"

namespace p2psim::peer {

class nvidia_peermem : public peer_memory_client {
 public:
  // `persistent`: the nv_mem_nc client (no free callback); else nv_mem.
  nvidia_peermem(rdma_core& core, bool persistent) : m_core(core), m_persistent(persistent) {}

  const char* name() const override { return m_persistent ? "nv_mem_nc" : "nv_mem"; }
  // nv_mem is registered with the core's invalidation callback; nv_mem_nc without one.
  bool invalidation_required() const override { return !m_persistent; }
  void* acquire(uint64_t addr, uint64_t size) override;
  int get_pages(void* context, uint64_t ticket) override;
  int dma_map(void* context, pci_dev* dev, std::vector<uint64_t>& pages,
              uint64_t& page_size) override;
  int dma_unmap(void* context, pci_dev* dev) override;
  void put_pages(void* context) override;
  void release(void* context) override;
  uint64_t first_page_address(void* context) const override;

  uint64_t invalidations() const { return m_invalidations; }
  // What a registration holds (NULL once its free callback ran or it was put): the page table
  // and the device's DMA mapping, as a debugger would show them.
  static const nvidia_p2p_page_table_t* page_table_of(const void* context);
  static const nvidia_p2p_dma_mapping_t* dma_mapping_of(const void* context);

 private:
  struct registration {  // nv_mem_context
    nvidia_peermem* client = nullptr;
    uint64_t start = 0, size = 0;  // 64 KiB-rounded
    nvidia_p2p_page_table_t* page_table = nullptr;
    nvidia_p2p_dma_mapping_t* dma_mapping = nullptr;
    uint64_t ticket = 0;
    bool in_callback = false;  // its free callback is running
  };
  static void free_callback(void* data);   // the real one: invalidates, then frees
  static void probe_callback(void* data);  // acquire's: only frees the table

  rdma_core& m_core;
  bool m_persistent;
  uint64_t m_invalidations = 0;
};

}  // namespace p2psim::peer
