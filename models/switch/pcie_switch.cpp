#include "models/switch/pcie_switch.h"

#include <string>

#include "models/dma/completer.h"
#include "models/pcie/address.h"
#include "models/pcie/time_units.h"
#include "models/transport/sim_clock.h"
#include "models/transport/stream_log.h"
#include "models/transport/tlp_txn.h"

namespace p2psim::pcie_switch {

using namespace sc_core;

pcie_switch::pcie_switch(sc_module_name name, const switch_params& p, transport::stream_log& log)
    : sc_module(name), m_params(p), m_latency_ps(pcie::ns_to_ps(p.latency_ns)), m_log(log) {
  for (int i = 0; i <= p.downstream_ports; ++i) {
    std::string n = i == 0 ? "up" : "down" + std::to_string(i - 1);
    m_ports.push_back(std::make_unique<transport::pcie_port>(n.c_str(), *this, i));
  }
  m_stats.ingress.resize(m_ports.size());
  m_departures.resize(m_ports.size());
}

void pcie_switch::set_route(int i, std::vector<pcie::window> mmio, uint8_t lo, uint8_t hi,
                            bool switch_below) {
  m_routes.add({1 + i, std::move(mmio), lo, hi, switch_below});
}

// The egress port for a TLP that came in at `in`, or -1 to refuse it.
int pcie_switch::route(int in, tlm::tlm_generic_payload& gp) {
  const auto& h = transport::hdr(gp);
  if (h.type == pcie::tlp_type::cpl || h.type == pcie::tlp_type::cpld) {
    int out = m_routes.by_bus(pcie::bus_of(h.requester_id));
    if (out < 0) out = 0;
    return out == in ? -1 : out;
  }
  const pcie::request_egress e = m_routes.route_request(in, h.address, m_params.acs_redirect);
  if (e.redirected) ++m_stats.acs_redirected_tlps;
  return e.port;
}

void pcie_switch::receive(int in, tlm::tlm_generic_payload& gp) {
  int out = route(in, gp);
  const auto& h = transport::hdr(gp);
  // A request for a port whose link is down: non-posted ones get UR (PCIe Base Spec 2.9.1),
  // posted ones go on to the link, which discards them. A posted request the switch refuses
  // is dropped, and its bytes are counted refused (the requester gets no completion to wait
  // for).
  if (out >= 0 && !m_ports[out]->link_up() && pcie::is_non_posted(h.type)) out = -1;
  if (out < 0) {
    if (pcie::is_completion(h.type)) {
      ++m_stats.unexpected_completions;
      m_ports[in]->free_buffer(gp);
      gp.release();
    } else {
      ++m_stats.unsupported_requests;
      dma::refuse_request(*m_ports[in], gp, m_params.bdf, pcie::cpl_status::ur, SC_ZERO_TIME,
                          &m_log);
    }
    return;
  }
  ++m_stats.forwarded_tlps;
  transport::txn(gp).ext.ingress_port = in;
  auto& occ = m_stats.ingress[in];
  const int c = int(pcie::fc_class_of(h.type));
  count_departures(in, c);
  occ.max[c] = std::max(occ.max[c], ++occ.now[c]);
  auto& m = transport::meta(gp);
  const uint64_t wait = forwarding_wait(m.last_ser_ps);
  // A burst goes on `wait` after its first TLP's tail came in, and its last TLP the
  // forwarding wait of its own size after its tail: its lag from here is that much longer
  // (or shorter) where the two TLPs differ in size.
  if (m.burst && m.tlps > 1 && m.tail_ser_ps)
    m.lag_ps = m.lag_ps + forwarding_wait(m.tail_ser_ps) - wait;
  m_ports[out]->send(gp, transport::ps(wait));
}

// Cut-through: the egress may start `latency` after the header came in, i.e. the
// serialization time of the TLP earlier than its tail (which is when it is received).
uint64_t pcie_switch::forwarding_wait(uint64_t ser) const {
  return m_params.cut_through ? (m_latency_ps > ser ? m_latency_ps - ser : 0) : m_latency_ps;
}

// What the switch hands an egress comes from what reaches its ports. A TLP still to start
// on a link toward it arrives no sooner than its own serialization time from now and
// leaves the latency after its header came in: it is ready no sooner than now + latency,
// which is no earlier than any `t` asked about (a TLP the switch handed over is ready at
// most that long after). So only the TLPs on the wire now can be sooner. Each is ready its
// forwarding wait after its tail arrives (cut-through: the latency after its header, but not
// before its tail). A link sends one TLP after another, so headers and tails both come in
// order and the first TLP on each wire is the soonest. Or a TLP is answered at once: a
// request this port sent that the switch refuses itself (an Unsupported Request
// completion). Where each goes is not looked up: any might go to `out`. A promise about all
// TLPs holds for completions too.
bool pcie_switch::promises_ready_no_sooner_than(int out, uint64_t t,
                                                transport::promise_scope) const {
  if (t > transport::now_ps() + m_latency_ps) return false;
  for (const auto& port : m_ports) {
    const auto& wire = port->arriving();
    if (wire.empty()) continue;
    if (wire.front().at_ps + forwarding_wait(wire.front().ser_ps) < t) return false;
    if (port->index() == out && port->arriving_of(pcie::fc_class::non_posted))
      for (const transport::pcie_port::arrival& a : wire) {
        if (a.at_ps >= t) break;  // by arrival: the rest are later still
        if (pcie::is_non_posted(a.type)) return false;
      }
  }
  return true;
}

void pcie_switch::sent(int, tlm::tlm_generic_payload& gp, uint64_t after_ps) {
  // The TLP leaves the switch `after_ps` from now: its ingress buffer is free again then.
  int in = transport::txn(gp).ext.ingress_port;
  if (in < 0) return;  // a completion the switch itself made
  const int c = int(pcie::fc_class_of(transport::hdr(gp).type));
  if (after_ps) {
    m_departures[in][c].insert_sorted(transport::now_ps() + after_ps,
                                      [](uint64_t at) { return at; });
  } else {
    --m_stats.ingress[in].now[c];
  }
  m_ports[in]->free_buffer(gp, transport::ps(after_ps));
}

void pcie_switch::count_departures(int in, int cls) {
  departures& d = m_departures[in][cls];
  const uint64_t now = transport::now_ps();
  for (; !d.empty() && d.front() <= now; d.pop_front()) --m_stats.ingress[in].now[cls];
}

}  // namespace p2psim::pcie_switch
