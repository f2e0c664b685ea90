// RDMA memory registration over peer memory (guide 6.7: nvidia-peermem registers the GPU with
// the InfiniBand core's peer-memory API, which MLNX_OFED adds): a verbs-like `ibv_reg_mr` on
// an address asks each registered peer-memory client in turn whether the range is its memory;
// the one that takes it pins it and maps it for the RDMA device, whose memory region (MR) then
// turns remote addresses into bus addresses. A client that learns its memory is going (a free
// callback) calls the core's invalidation, which stops the MR: remote accesses to it fail
// from then on. Pure C++; the names follow the peer-memory API, the behaviour is the core's
// with PEER_MEM_INVALIDATE_UNMAPS (the client unmaps and unpins by itself when invalidated, so
// deregistering an invalidated MR only releases it). Which clients a registration may use
// depends on whether its device driver can take an invalidation (IB_PEER_MEM_INVAL_SUPP, which
// mlx5's user MRs declare): a client that requires one is skipped for a registration that
// cannot.
#pragma once

#include <cstdint>
#include <functional>
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
  // Registered with an invalidation callback: a registration that cannot be invalidated may not
  // use it.
  virtual bool invalidation_required() const = 0;
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
  int in_flight = 0;         // remote accesses the device is carrying out through it now
};

struct rdma_stats {
  uint64_t registrations = 0, refused = 0, deregistrations = 0, invalidations = 0;
  uint64_t accesses_refused = 0;      // remote accesses to an invalidated MR or outside one
  uint64_t waited_invalidations = 0;  // invalidations that waited for accesses in flight
};

class rdma_core {
 public:
  rdma_core();
  ~rdma_core();
  rdma_core(const rdma_core&) = delete;
  rdma_core& operator=(const rdma_core&) = delete;

  // ib_register_peer_memory_client: asked in registration order.
  void register_client(peer_memory_client* client) { m_clients.push_back(client); }
  // ibv_reg_mr of [addr, addr + size) of the calling process for `dev`: 0 and the MR, or
  // -EINVAL (size 0), -EFAULT (no client takes the range: this model has no host memory
  // path), or the client's -errno from pinning or mapping. `invalidation_supported`: the
  // device's driver can stop the MR when asked (IB_PEER_MEM_INVAL_SUPP); without it, clients
  // that require invalidation are not asked.
  int reg_mr(pci_dev* dev, uint64_t addr, uint64_t size, rdma_mr** out,
             bool invalidation_supported = true);
  // ibv_dereg_mr: unmaps and unpins through the client, unless it was invalidated (the client
  // did both then), and releases. -EINVAL for an MR that is not live, -EBUSY while remote
  // accesses through it are in flight (the device would still be writing into the pages).
  int dereg_mr(rdma_mr* mr);
  // invalidate_peer_memory: what a client calls when the memory behind `ticket` goes. The
  // device stops the MR and waits for the accesses in flight through it before this returns
  // (mlx5 revokes the memory key and waits for that to complete), so no access reaches the
  // pages once the client frees them.
  void invalidate(uint64_t ticket);
  // A remote access through `mr` starts or ends (the device's DMA is in flight meanwhile).
  void access_begin(rdma_mr& mr) { ++mr.in_flight; }
  void access_end(rdma_mr& mr) { --mr.in_flight; }
  // How an invalidation waits for an MR's accesses to end; the default requires none in flight.
  void set_wait_for_idle(std::function<void(rdma_mr&)> wait) { m_wait = std::move(wait); }
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
  std::function<void(rdma_mr&)> m_wait;
};

}  // namespace p2psim::peer
