// The scenario runner's view of the fabric: where a transfer's bytes live on the bus (a GPU's BAR1
// mapped onto VRAM, a DMA engine's BAR2, a socket's host memory).
#pragma once

#include <cstdint>
#include <string>

#include "models/dma/dma_requester.h"
#include "models/memory/backing_store.h"
#include "sim/core/system.h"

namespace p2psim::core {

struct region_options {
  bool map_bar1 = true;                  // GPU target: map BAR1 pages onto VRAM
  iommu::iommu_domain* iommu = nullptr;  // the initiator's IOMMU domain, if any
  bool iommu_map = true;                 // a translating domain: map the region in it
  bool device_writes = true;             // the initiator writes the region (else reads it)
};

// A region of `bytes` on the target, reachable at `bus_address`, stored at `offset` of
// `store`. For a GPU, BAR1 pages are mapped onto VRAM for the region's lifetime, as the
// nv-p2p driver does when a peer pins the memory. Behind a translating IOMMU the region is
// also mapped in the initiator's domain, for the direction of the DMA only, and the bus
// address is the IOVA, as a device driver's dma_map does (GPUDirect RDMA 13.3, 5.4 IOMMUs).
class target_region {
 public:
  target_region(fabric_system& sys, const std::string& name, uint64_t offset, uint64_t bytes,
                const region_options& o = {});
  ~target_region();
  target_region(const target_region&) = delete;
  target_region& operator=(const target_region&) = delete;
  uint64_t bus_address() const { return m_bus; }
  memory::backing_store& store() { return *m_store; }
  uint64_t offset() const { return m_offset; }

 private:
  gpu::gpu* m_gpu = nullptr;
  uint64_t m_first_page = 0, m_pages = 0;
  iommu::iommu_domain* m_iommu = nullptr;  // where the IOVA is mapped, if it is
  uint64_t m_iova = 0, m_bytes = 0;
  memory::backing_store* m_store = nullptr;
  uint64_t m_bus = 0, m_offset = 0;
};

// Bytes a target can hold for transfers (for the GPU: BAR1 outside the reserved region).
uint64_t target_capacity(const topo::topology& t, const topo::address_map& a,
                         const std::string& name);
uint64_t initiator_capacity(const topo::topology& t, const std::string& name);

}  // namespace p2psim::core
