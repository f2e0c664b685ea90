// The scenario runner's view of the fabric: who can initiate a DMA (a GPU's copy engine, a
// DMA engine) and where a transfer's bytes live on the bus (a GPU's BAR1 mapped onto VRAM,
// a DMA engine's BAR2, a socket's host memory).
#pragma once

#include <cstdint>
#include <string>

#include "models/dma/dma_requester.h"
#include "models/memory/backing_store.h"
#include "sim/core/system.h"

namespace p2psim::core {

class initiator_ref {
 public:
  initiator_ref(fabric_system& sys, const std::string& name);
  explicit operator bool() const { return m_gpu || m_engine; }
  memory::backing_store& local();
  void submit(dma::dma_job job);

 private:
  gpu::gpu* m_gpu = nullptr;
  dma_engine::dma_engine* m_engine = nullptr;
};

// A region of `bytes` on the target, reachable at `bus_address`, stored at `offset` of
// `store`. For a GPU, BAR1 pages are mapped onto VRAM for the region's lifetime, as the
// nv-p2p driver does when a peer pins the memory.
class target_region {
 public:
  target_region(fabric_system& sys, const std::string& name, uint64_t offset, uint64_t bytes,
                bool map_bar1 = true);
  ~target_region();
  target_region(const target_region&) = delete;
  target_region& operator=(const target_region&) = delete;
  uint64_t bus_address() const { return m_bus; }
  memory::backing_store& store() { return *m_store; }
  uint64_t offset() const { return m_offset; }

 private:
  gpu::gpu* m_gpu = nullptr;
  uint64_t m_first_page = 0, m_pages = 0;
  memory::backing_store* m_store = nullptr;
  uint64_t m_bus = 0, m_offset = 0;
};

// Bytes a target can hold for transfers (for the GPU: BAR1 outside the reserved region).
uint64_t target_capacity(const topo::topology& t, const topo::address_map& a,
                         const std::string& name);
uint64_t initiator_capacity(const topo::topology& t, const std::string& name);

}  // namespace p2psim::core
