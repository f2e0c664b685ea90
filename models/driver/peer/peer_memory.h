// RDMA memory registration over peer memory (guide 6.7: nvidia-peermem registers the GPU with
// the InfiniBand core's peer-memory API, which MLNX_OFED adds): a verbs-like `ibv_reg_mr` on
// an address asks each registered peer-memory client in turn whether the range is its memory;
// the one that takes it pins it and maps it for the RDMA device, whose memory region (MR) then
// turns remote addresses into bus addresses. A client that learns its memory is going (a free
// callback) calls the core's invalidation, which stops the MR: remote accesses to it fail
// from then on. Pure C++; the names follow the peer-memory API, the behaviour is the core's
// with PEER_MEM_INVALIDATE_UNMAPS (the client unmaps and unpins by itself when invalidated, so
// deregistering an invalidated MR only releases it).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "models/driver/kernel/kernel.h"
#include "models/driver/kernel/user_memory.h"

namespace p2psim::peer {

class rdma_core;

// What a peer-memory client implements (struct peer_memory_client). Each call gets the
// client's own context for one registration.
class peer_memory_client {
 public:
  virtual ~peer_memory_client() = default;
  virtual const char* name() const = 0;
  // Is [addr, addr + size) of the calling process this client's memory? If so, a context for
  // the registration (nullptr: not mine).
  virtual void* acquire(uint64_t addr, uint64_t size) = 0;
  // Pins what acquire took; `ticket` names the registration to the core's invalidation.
  virtual int get_pages(void* context, uint64_t ticket) = 0;
  // Maps the pinned memory for `dev`: one bus address per page of `page_size` bytes.
  virtual int dma_map(void* context, pci_dev* dev, std::vector<uint64_t>& pages,
                      uint64_t& page_size) = 0;
  virtual int dma_unmap(void* context, pci_dev* dev) = 0;
  virtual void put_pages(void* context) = 0;
  virtual void release(void* context) = 0;  // the context goes
  // Where the pages start: the pinned range may begin below the registered address.
  virtual uint64_t first_page_address(void* context) const = 0;
};

// A registered memory region of an RDMA device.
struct rdma_mr {
  uint64_t addr = 0, size = 0;  // as registered
  uint32_t rkey = 0;            // what remote peers name it by
  int pid = 0;                  // whose memory
  pci_dev* device = nullptr;
  peer_memory_client* client = nullptr;
  void* context = nullptr;
  uint64_t ticket = 0;
  std::vector<uint64_t> pages;  // bus address of each page, from first_page
  uint64_t first_page = 0, page_size = 0;
  bool invalidated = false;  // its memory went: remote accesses fail
};

struct rdma_stats {
  uint64_t registrations = 0, refused = 0, deregistrations = 0, invalidations = 0;
  uint64_t accesses_refused = 0;  // remote accesses to an invalidated MR or outside one
};

class rdma_core {
 public:
  rdma_core() = default;
  ~rdma_core();
  rdma_core(const rdma_core&) = delete;
  rdma_core& operator=(const rdma_core&) = delete;

  // ib_register_peer_memory_client: asked in registration order.
  void register_client(peer_memory_client* client) { m_clients.push_back(client); }
  // ibv_reg_mr of [addr, addr + size) of the calling process for `dev`: 0 and the MR, or
  // -EINVAL (size 0), -EFAULT (no client takes the range: this model has no host memory
  // path), or the client's -errno from pinning or mapping.
  int reg_mr(pci_dev* dev, uint64_t addr, uint64_t size, rdma_mr** out);
  // ibv_dereg_mr: unmaps and unpins through the client, unless it was invalidated (the client
  // did both then), and releases. -EINVAL for an MR that is not live.
  int dereg_mr(rdma_mr* mr);
  // invalidate_peer_memory: what a client calls when the memory behind `ticket` goes.
  void invalidate(uint64_t ticket);
  // What the device does with a remote access to [addr, addr + length) through `rkey`: the
  // bus runs, or -EACCES (no such MR, invalidated, or outside it: a remote access error).
  int translate(uint32_t rkey, uint64_t addr, uint64_t length, std::vector<kernel::bus_run>& out);
  rdma_mr* find(uint32_t rkey) const;
  const rdma_stats& stats() const { return m_stats; }

 private:
  std::vector<peer_memory_client*> m_clients;
  std::vector<std::unique_ptr<rdma_mr>> m_mrs;  // live ones
  uint64_t m_next_ticket = 1;
  uint32_t m_next_rkey = 0x100;
  rdma_stats m_stats;
};

}  // namespace p2psim::peer
