#include "models/root_complex/iommu_stage.h"
#include "models/transport/activity.h"

#include <algorithm>

#include "models/pcie/time_units.h"
#include "models/transport/sim_clock.h"
#include "models/transport/stream_log.h"
#include "models/transport/tlp_txn.h"

namespace p2psim::root_complex {

using namespace sc_core;

iommu_stage::iommu_stage(sc_module_name name, int ports, deliver_fn deliver)
    : sc_module(name), m_ports(ports), m_deliver(std::move(deliver)) {
  SC_METHOD(drain);
  sensitive << m_wake;
  dont_initialize();
}

iommu::iommu_domain& iommu_stage::add_domain(uint16_t requester_id, const iommu::iommu_params& p) {
  auto& d = m_domains[requester_id];
  d = std::make_unique<iommu::iommu_domain>(p);
  return *d;
}

iommu::iommu_domain* iommu_stage::domain(uint16_t requester_id) {
  auto it = m_domains.find(requester_id);
  return it == m_domains.end() ? nullptr : it->second.get();
}

void iommu_stage::receive(int port, tlm::tlm_generic_payload& gp) {
  auto& pq = m_ports[port];
  const uint64_t now = transport::now_ps();
  uint64_t ready = std::max(now, pq.ready_by(now));
  const size_t others = pq.trickles.size();  // this TLP's own, if it is a burst, comes after
  bool blocked = false, walked = false;
  auto& h = transport::hdr(gp);
  const bool request = !pcie::is_completion(h.type) && h.type != pcie::tlp_type::msg;
  if (auto* d = request ? domain(h.requester_id) : nullptr) {
    // A request never crosses 4 KiB and I/O pages are at least that big: one translation.
    // An AtomicOp writes, so it needs write permission. A burst stands for requests of one
    // I/O page (bursts never cross 4 KiB behind a translating IOMMU), each looked up as the
    // TLPs would be: without an IOTLB every one of them walks, one after another.
    // The burst goes on as its first TLP would, once that one's walk is done, and its lag
    // says when the last follows: after every walk, and its own if it walked, once it came
    // in. (Held until all had walked, a burst of N TLPs would reach its target N-1 walks
    // late: its first TLPs are what the next link could send meanwhile.)
    const bool write = h.type != pcie::tlp_type::mrd;
    auto& m = transport::meta(gp);
    auto t = d->translate(h.address, write);
    uint32_t walks = t.iotlb_hit ? 0 : 1;
    for (uint32_t k = 1; k < m.tlps; ++k) walks += !d->translate(h.address, write).iotlb_hit;
    if (walks) {
      walked = true;
      const uint64_t walk = pcie::ns_to_ps(d->params().miss_latency_ns);
      ready += t.iotlb_hit ? 0 : walk;
      m_walk_wait_ps += walks * walk;
      if (m.tlps > 1) {  // in order: what comes in later waits for the walks before it
        const uint32_t later_walks = walks - (t.iotlb_hit ? 0 : 1);
        const trickle b{
            now, m.lag_ps, m.tlps, ready, later_walks * walk, walks == m.tlps ? walk : 0,
            {},  nullptr};
        m.lag_ps = b.last_ready_ps() - ready;
        if (m.lag_ps) pq.trickles.push_back(b);
      }
    }
    if (t.ok)
      h.address = t.address;  // on to the physical address; the payload is unchanged
    else
      blocked = true;
  }
  // A burst held behind an earlier TLP's walk without walking itself: its TLPs came in
  // meanwhile, and those in by the time it goes on leave back to back, as TLPs held in the
  // pipeline would. Its lag is only what is still to come in then (keeping its arrival lag,
  // it trickled onto the next link at the speed of the one it came in on).
  if (auto& m = transport::meta(gp); !walked && ready > now) {
    if (m.tlps > 1 && now + m.lag_ps > ready)
      pq.trickles.push_back({now, m.lag_ps, m.tlps, ready, 0, 0, {}, nullptr});
    m.lag_ps = now + m.lag_ps > ready ? now + m.lag_ps - ready : 0;
  }
  pq.busy_until_ps = std::max(pq.busy_until_ps, ready);
  // Bursts whose TLPs still come in: those after this one go on after it, as they would in
  // an in-order pipeline TLP by TLP; a burst still waiting here learns its later lag.
  for (size_t i = 0; i < others; ++i) {
    trickle& b = pq.trickles[i];
    const uint32_t next = b.in_by(now) + 1;
    if (next >= b.tlps) continue;
    b.cut_ins.push_back({next, ready});
    if (b.waiting) transport::meta(*b.waiting).lag_ps = b.last_ready_ps() - b.first_ready_ps;
  }
  if (pq.waiting.empty() && ready == now) {
    m_deliver(port, gp, blocked);
    return;
  }
  if (pq.trickles.size() > others) pq.trickles.back().waiting = &gp;
  pq.waiting.push_back({&gp, ready, blocked});
  if (pq.waiting.size() == 1) m_wake.notify(transport::ps(ready - now));  // an earlier one wins
}

uint64_t iommu_stage::port_queue::ready_by(uint64_t now) {
  uint64_t t = busy_until_ps;
  std::erase_if(trickles, [&](const trickle& b) { return b.last_ready_ps() <= now; });
  for (const auto& b : trickles) t = std::max(t, b.ready_by(now));
  return t;
}

uint64_t iommu_stage::first_held_ready_ps() const {
  uint64_t t = UINT64_MAX;  // a port's queue goes on in order: its front is its first
  for (const auto& pq : m_ports)
    if (!pq.waiting.empty()) t = std::min(t, pq.waiting.front().ready_ps);
  return t;
}

void iommu_stage::drain() {
  transport::note_activity(this);
  const uint64_t now = transport::now_ps();
  uint64_t next = UINT64_MAX;
  for (size_t port = 0; port < m_ports.size(); ++port) {
    auto& q = m_ports[port].waiting;
    while (!q.empty() && q.front().ready_ps <= now) {
      held h = q.front();
      q.pop_front();  // before delivering: the root complex may hand us more
      for (trickle& b : m_ports[port].trickles)
        if (b.waiting == h.gp) b.waiting = nullptr;
      m_deliver(int(port), *h.gp, h.blocked);
    }
    if (!q.empty()) next = std::min(next, q.front().ready_ps);
  }
  if (next != UINT64_MAX) m_wake.notify(transport::ps(next - now));
}

}  // namespace p2psim::root_complex
