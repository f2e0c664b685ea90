// What a device that starts DMAs offers whoever drives it (the scenario runner, the litmus
// harness): the memory its DMAs read from and write into, and a queue of jobs. A GPU's copy
// engine and a third-party DMA engine both are one, so the simulation drives either without
// knowing which.
#pragma once

#include "models/dma/dma_requester.h"
#include "models/memory/backing_store.h"

namespace p2psim::dma {

class dma_initiator {
 public:
  virtual ~dma_initiator() = default;
  // A GPU's VRAM, a NIC's buffer.
  virtual memory::backing_store& local_memory() = 0;
  // Queues a job; a descriptor-driven device starts it after its descriptor latency.
  virtual void submit(dma_job job) = 0;
  // The requester that cuts jobs into TLPs: what it has issued, its stats.
  virtual const dma_requester& requester() const = 0;
};

}  // namespace p2psim::dma
