#include "models/driver/peer/peer_memory.h"

#include <algorithm>
#include <cerrno>
#include <stdexcept>

namespace p2psim::peer {

rdma_core::rdma_core()
    : m_wait([](rdma_mr& mr) {
        if (mr.in_flight)
          throw std::logic_error(
              "invalidation with accesses in flight and no way to wait for them");
      }) {}

// The core goes with its device: what is still registered is deregistered, as a process's
// exit closes its verbs context.
rdma_core::~rdma_core() {
  while (!m_mrs.empty()) {
    m_mrs.back()->in_flight = 0;  // nothing runs any more
    dereg_mr(m_mrs.back().get());
  }
}

int rdma_core::reg_mr(pci_dev* dev, uint64_t addr, uint64_t size, rdma_mr** out,
                      bool invalidation_supported) {
  if (!size || !out || size > ~uint64_t(0) - addr) return -EINVAL;
  for (peer_memory_client* c : m_clients) {
    if (c->invalidation_required() && !invalidation_supported) continue;
    void* context = c->acquire(addr, size);
    if (!context) continue;  // not its memory: the next client is asked
    auto mr = std::make_unique<rdma_mr>();
    mr->addr = addr;
    mr->size = size;
    mr->pid = kernel::current_pid();
    mr->device = dev;
    mr->client = c;
    mr->context = context;
    mr->ticket = m_next_ticket++;
    int r = c->get_pages(context, mr->ticket);
    if (r == 0) {
      r = c->dma_map(context, dev, mr->pages, mr->page_size);
      if (r) c->put_pages(context);
    }
    if (r) {
      c->release(context);
      ++m_stats.refused;
      return r;
    }
    mr->first_page = c->first_page_address(context);
    mr->rkey = m_next_rkey++;
    *out = mr.get();
    m_mrs.push_back(std::move(mr));
    ++m_stats.registrations;
    return 0;
  }
  ++m_stats.refused;
  return -EFAULT;  // nobody's memory (a host path would pin user pages here)
}

int rdma_core::dereg_mr(rdma_mr* mr) {
  auto it = std::find_if(m_mrs.begin(), m_mrs.end(), [&](const auto& p) { return p.get() == mr; });
  if (it == m_mrs.end()) return -EINVAL;
  if (mr->in_flight) return -EBUSY;  // the device is still using it
  if (!mr->invalidated) {            // invalidated: the client has unmapped and unpinned already
    mr->client->dma_unmap(mr->context, mr->device);
    mr->client->put_pages(mr->context);
  }
  mr->client->release(mr->context);
  m_mrs.erase(it);
  ++m_stats.deregistrations;
  return 0;
}

void rdma_core::invalidate(uint64_t ticket) {
  auto it =
      std::find_if(m_mrs.begin(), m_mrs.end(), [&](const auto& p) { return p->ticket == ticket; });
  if (it == m_mrs.end() || (*it)->invalidated) return;
  rdma_mr& mr = **it;     // stays: dereg_mr refuses an MR with accesses in flight
  mr.invalidated = true;  // no new access starts
  ++m_stats.invalidations;
  if (mr.in_flight) ++m_stats.waited_invalidations;
  m_wait(mr);  // and those under way end before the pages go
}

rdma_mr* rdma_core::find(uint32_t rkey) const {
  for (const auto& mr : m_mrs)
    if (mr->rkey == rkey) return mr.get();
  return nullptr;
}

int rdma_core::translate(uint32_t rkey, uint64_t addr, uint64_t length,
                         std::vector<kernel::bus_run>& out) {
  rdma_mr* mr = find(rkey);
  if (!mr || mr->invalidated || addr < mr->addr || length > mr->size ||
      addr - mr->addr > mr->size - length) {
    ++m_stats.accesses_refused;
    return -EACCES;
  }
  for (uint64_t at = addr; at < addr + length;) {
    const uint64_t page = (at - mr->first_page) / mr->page_size;
    const uint64_t offset = (at - mr->first_page) % mr->page_size;
    const uint64_t n = std::min(mr->page_size - offset, addr + length - at);
    const uint64_t bus = mr->pages.at(page) + offset;
    if (!out.empty() && out.back().bus + out.back().bytes == bus)
      out.back().bytes += n;
    else
      out.push_back({bus, n});
    at += n;
  }
  return 0;
}

}  // namespace p2psim::peer
