// A full-duplex PCIe link: two link_channels, one per direction, with the timing of
// docs/design.md, "PCIe timing" (raw rate from gen and width, per-TLP framing and headers, ACK and
// UpdateFC DLLPs at the configured rates, SKIP ordered sets, propagation latency).
#pragma once

#include <memory>
#include <string>
#include <systemc>

#include "models/link/link_channel.h"
#include "models/link/link_spec.h"
#include "models/pcie/dllp_rates.h"
#include "models/transport/pcie_port.h"

namespace p2psim::link {

// The declared settings (link_spec's `credits` are what a switch port advertises) and what
// elaboration decides.
struct pcie_link_params : link_spec {
  uint32_t mps = 256;                // selects the spec's DLLP-rate table column
  pcie::credit_limits down_credits;  // what the downstream component's receiver advertises
  pcie::credit_limits up_credits;    // what the upstream component's receiver advertises
  // How each end's receiver acknowledges what it receives (charged to the direction it
  // receives); the link's own `ack_limit` / `fc_limit`, when set, go for both.
  pcie::dllp_rates down_dllps, up_dllps;
};

class pcie_link : public sc_core::sc_module {
 public:
  // `order`: the fabric's ordering table and choice source, for both directions' queues.
  pcie_link(sc_core::sc_module_name name, const pcie_link_params& p,
            const pcie::order_policy& order);
  // Connects the upstream component's port and the downstream component's port.
  void connect(transport::pcie_port& upstream, transport::pcie_port& downstream);
  const link_channel& downstream() const { return *m_down; }  // toward the endpoint
  const link_channel& upstream() const { return *m_up; }      // toward the root complex
  // Burst fidelity: each direction paces its bursts by its receiver's credits and measures
  // those it would have needed TLP by TLP (link_channel::pace_bursts_by_credits), given how
  // each end holds a TLP it receives.
  void pace_bursts_by_credits(const receiver_hold& down, const receiver_hold& up) {
    m_down->pace_bursts_by_credits(down);
    m_up->pace_bursts_by_credits(up);
  }
  const pcie_link_params& params() const { return m_params; }
  double raw_gbs() const;
  // Takes the link down for good (a fault step): both directions drop what they carry, and
  // both ports see it (a switch or root port then answers requests for it with UR).
  void go_down(transport::stream_log& log);
  bool is_down() const { return m_down->down(); }

 private:
  pcie_link_params m_params;
  std::unique_ptr<link_channel> m_down, m_up;
  transport::pcie_port* m_upstream_port = nullptr;
  transport::pcie_port* m_downstream_port = nullptr;
};

// The socket interconnect (QPI / UPI / xGMI) between two root complexes, carrying TLPs
// tunnelled in its own packets: bandwidth and latency per direction, a fixed overhead per
// packet, no PCIe DLLPs.
struct interconnect_link_params : interconnect_spec {
  uint32_t packet_overhead = 16;  // header flits per tunnelled TLP, bytes
};

class interconnect_link : public sc_core::sc_module {
 public:
  interconnect_link(sc_core::sc_module_name name, const interconnect_link_params& p,
                    const pcie::order_policy& order);
  void connect(transport::pcie_port& a, transport::pcie_port& b);
  const link_channel& a_to_b() const { return *m_ab; }
  const link_channel& b_to_a() const { return *m_ba; }
  const interconnect_link_params& params() const { return m_params; }

 private:
  interconnect_link_params m_params;
  std::unique_ptr<link_channel> m_ab, m_ba;
};

}  // namespace p2psim::link
