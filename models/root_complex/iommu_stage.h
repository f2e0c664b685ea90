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
  struct port_queue {
    std::deque<held> waiting;
    uint64_t busy_until_ps = 0;  // when the last TLP taken in may go on
  };
  void drain();  // delivers every TLP whose time has come

  std::vector<port_queue> m_ports;
  std::map<uint16_t, std::unique_ptr<iommu::iommu_domain>> m_domains;
  deliver_fn m_deliver;
  sc_core::sc_event m_wake;
  uint64_t m_walk_wait_ps = 0;
};

}  // namespace p2psim::root_complex
