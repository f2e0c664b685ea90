// The IOMMU in front of a root complex's root ports (docs/design.md, "Topology classes";
// GPUDirect RDMA 13.3, 5.4 IOMMUs): one translation domain per device below the socket, keyed
// by requester ID. Every request a device sends is translated before the root complex routes
// it: its address becomes the physical one, an IOTLB miss holds it for the page walk, and a
// fault blocks it.
//
// Each root port is an in-order pipeline: a TLP waiting for a walk holds back the TLPs behind
// it (completions included), so translation never reorders what the device sent, and its
// ingress buffer stays taken, so a slow walk back-pressures the link through its credits.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include <systemc>
#include <tlm>

#include "models/iommu/iommu.h"

namespace p2psim::root_complex {

class iommu_stage : public sc_core::sc_module {
 public:
  // Hands a TLP on to the root complex once it may go: `blocked` marks a request the IOMMU
  // refused (unmapped, or no permission), which must not reach its target.
  using deliver_fn = std::function<void(int port, tlm::tlm_generic_payload& gp, bool blocked)>;

  SC_HAS_PROCESS(iommu_stage);
  iommu_stage(sc_core::sc_module_name name, int ports, deliver_fn deliver);

  iommu::iommu_domain& add_domain(uint16_t requester_id, const iommu::iommu_params& p);
  iommu::iommu_domain* domain(uint16_t requester_id);
  const std::map<uint16_t, std::unique_ptr<iommu::iommu_domain>>& domains() const {
    return m_domains;
  }
  // A TLP that arrived on root port `port`.
  void receive(int port, tlm::tlm_generic_payload& gp);
  uint64_t walk_wait_ps() const { return m_walk_wait_ps; }  // time requests spent in walks
  // When the first TLP held for a walk (or behind one) goes on; UINT64_MAX if none is.
  uint64_t first_held_ready_ps() const;

 private:
  struct held {
    tlm::tlm_generic_payload* gp;
    uint64_t ready_ps;
    bool blocked;
  };
  // Burst fidelity: a burst that went on at its first TLP's time while the rest of its TLPs
  // still come in (evenly over `lag_ps` from `arrived_ps`) and go through the pipeline after
  // it. A TLP that comes in meanwhile came in between them (a link lets it into a burst's
  // gaps): it waits for those that came in before it, not for the whole burst.
  struct trickle {
    uint64_t arrived_ps, lag_ps;  // its first TLP's arrival; its last's, that long after
    uint32_t tlps;
    uint64_t first_ready_ps;  // when its first TLP went on
    uint64_t later_walks_ps;  // the walks of the TLPs after its first, one after another
    uint64_t tail_walk_ps;    // every TLP walks: each goes on this long after it came in
    // A TLP (or burst) of another stream that came in between its TLPs went on at
    // `after_ps`: in order, its TLPs from `from` on go after it, each after its own walk.
    struct cut_in {
      uint32_t from;
      uint64_t after_ps;
    };
    std::vector<cut_in> cut_ins;
    // The burst, while it waits in the queue (its lag can still grow); null once it went on.
    tlm::tlm_generic_payload* waiting = nullptr;
    uint64_t last_ready_ps() const { return ready_ps(tlps - 1); }
    // When its TLP k (of 0..tlps-1, arriving evenly spread) goes on.
    uint64_t ready_ps(uint32_t k) const {
      uint64_t t = std::max(first_ready_ps + later_walks_ps * k / (tlps - 1),
                            arrived_ps + lag_ps * k / (tlps - 1) + tail_walk_ps);
      for (const cut_in& c : cut_ins)
        if (k >= c.from)
          t = std::max(t, c.after_ps + later_walks_ps * (k - c.from + 1) / (tlps - 1));
      return t;
    }
    // The last of its TLPs that came in by `t`.
    uint32_t in_by(uint64_t t) const {
      const uint64_t in = t <= arrived_ps ? 0
                          : lag_ps        ? (t - arrived_ps) * (tlps - 1) / lag_ps
                                          : tlps - 1;
      return uint32_t(std::min<uint64_t>(in, tlps - 1));
    }
    // When its TLPs that came in by `t` have gone on.
    uint64_t ready_by(uint64_t t) const { return ready_ps(in_by(t)); }
  };
  struct port_queue {
    std::deque<held> waiting;
    uint64_t busy_until_ps = 0;     // when the last TLP taken in (a burst's first) may go on
    std::vector<trickle> trickles;  // bursts whose later TLPs are still to go on
    // When what came in by `now` has gone on; forgets the bursts that are through.
    uint64_t ready_by(uint64_t now);
  };
  void drain();  // delivers every TLP whose time has come

  std::vector<port_queue> m_ports;
  std::map<uint16_t, std::unique_ptr<iommu::iommu_domain>> m_domains;
  deliver_fn m_deliver;
  sc_core::sc_event m_wake;
  uint64_t m_walk_wait_ps = 0;
};

}  // namespace p2psim::root_complex
