#include "models/link/pcie_link.h"

#include "models/pcie/link_timing.h"
#include "models/pcie/time_units.h"

namespace p2psim::link {

using namespace sc_core;

pcie_link::pcie_link(sc_module_name name, const pcie_link_params& p,
                     const pcie::order_policy& order)
    : sc_module(name), m_params(p) {
  channel_timing t;
  t.ps_per_byte = 1000.0 / pcie::raw_gbs(p.gen, p.width);
  t.latency_ps = pcie::ns_to_ps(p.latency_ns);
  t.pcie_framing = true;
  t.ecrc = p.ecrc;
  t.skip_ordered_sets = true;
  // The DLLPs a direction's receiver sends are charged to that direction (docs/architecture.md,
  // "Timing model and why"): the link's limits if it sets them, else that receiver's, else the
  // spec's tables.
  auto with_dllps = [&](const pcie::dllp_rates& receiver) {
    channel_timing d = t;
    d.ack_limit = p.ack_limit          ? p.ack_limit
                  : receiver.ack_limit ? receiver.ack_limit
                                       : pcie::spec_ack_limit(p.gen, p.width, p.mps);
    d.fc_limit = p.fc_limit          ? p.fc_limit
                 : receiver.fc_limit ? receiver.fc_limit
                                     : pcie::spec_fc_limit(p.gen, p.width, p.mps);
    return d;
  };
  m_down = std::make_unique<link_channel>("down", with_dllps(p.down_dllps), p.down_credits, order);
  m_up = std::make_unique<link_channel>("up", with_dllps(p.up_dllps), p.up_credits, order);
}

double pcie_link::raw_gbs() const {
  return pcie::raw_gbs(m_params.gen, m_params.width);
}

void pcie_link::go_down(transport::stream_log& log) {
  m_down->go_down(log);
  m_up->go_down(log);
  m_upstream_port->link_down(log);
  m_downstream_port->link_down(log);
}

void pcie_link::connect(transport::pcie_port& upstream, transport::pcie_port& downstream) {
  m_upstream_port = &upstream;
  m_downstream_port = &downstream;
  upstream.tx.bind(m_down->in);
  m_down->out.bind(downstream.rx);
  downstream.tx.bind(m_up->in);
  m_up->out.bind(upstream.rx);
  m_down->set_sender(upstream);
  m_up->set_sender(downstream);
  m_down->set_receiver(downstream);
  m_up->set_receiver(upstream);
  upstream.set_feed(*m_up);
  downstream.set_feed(*m_down);
  upstream.set_egress(*m_down);
  downstream.set_egress(*m_up);
}

interconnect_link::interconnect_link(sc_module_name name, const interconnect_link_params& p,
                                     const pcie::order_policy& order)
    : sc_module(name), m_params(p) {
  channel_timing t;
  t.ps_per_byte = 1000.0 / p.bandwidth_gbs;
  t.latency_ps = pcie::ns_to_ps(p.latency_ns);
  t.pcie_framing = false;
  t.packet_overhead = p.packet_overhead;
  // The interconnect's own link layer has ample buffering for tunnelled PCIe traffic:
  // its credits are not modelled (infinite), its throughput is.
  m_ab = std::make_unique<link_channel>("a_to_b", t, pcie::credit_limits{}, order);
  m_ba = std::make_unique<link_channel>("b_to_a", t, pcie::credit_limits{}, order);
}

void interconnect_link::connect(transport::pcie_port& a, transport::pcie_port& b) {
  a.tx.bind(m_ab->in);
  m_ab->out.bind(b.rx);
  b.tx.bind(m_ba->in);
  m_ba->out.bind(a.rx);
  m_ab->set_sender(a);
  m_ba->set_sender(b);
  m_ab->set_receiver(b);
  m_ba->set_receiver(a);
  a.set_feed(*m_ba);
  b.set_feed(*m_ab);
  a.set_egress(*m_ab);
  b.set_egress(*m_ba);
}

}  // namespace p2psim::link
