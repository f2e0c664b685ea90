#include "models/root_complex/root_complex.h"

#include <string>

#include "models/dma/completer.h"
#include "models/pcie/address.h"
#include "models/pcie/split.h"
#include "models/pcie/time_units.h"
#include "models/transport/sim_clock.h"
#include "models/transport/tlp_txn.h"

namespace p2psim::root_complex {

using namespace sc_core;

root_complex::root_complex(sc_module_name name, const rc_params& p, transport::tlp_pool& pool,
                           transport::stream_log& log, const pcie::order_policy& order)
    : sc_module(name),
      m_params(p),
      m_log(log),
      m_memory(p.memory.size),
      m_cpu_cache(order),
      m_memory_port(m_memory, p.platform.memory, p.bdf, log),
      m_p2p(p.platform.p2p, *this, pool, pcie::ns_to_ps(p.platform.rc_latency_ns), 0),
      m_interconnect_p2p(interconnect_forwarding(p.platform), *this, pool,
                         pcie::ns_to_ps(p.platform.rc_latency_ns), p2p_forwarder::proxy_tags),
      m_iommu("iommu", p.root_ports,
              [this](int in, tlm::tlm_generic_payload& gp, bool blocked) {
                dispatch(in, gp, blocked);
              }),
      m_write_commit("write_commit", order, p.platform.reorders_relaxed_writes,
                     pcie::ns_to_ps(p.platform.memory.latency_ns),
                     [this](int in, tlm::tlm_generic_payload& gp) { to_memory(in, gp); }),
      m_latency_ps(pcie::ns_to_ps(p.platform.rc_latency_ns)) {
  for (int i = 0; i < p.root_ports + p.interconnect_ports; ++i) {
    std::string n = i < p.root_ports ? "rp" + std::to_string(i)
                                     : "interconnect" + std::to_string(i - p.root_ports);
    m_ports.push_back(std::make_unique<transport::pcie_port>(n.c_str(), *this, i));
  }
}

void root_complex::set_root_port_route(int i, std::vector<pcie::window> mmio, uint8_t lo,
                                       uint8_t hi) {
  m_root_routes.add({i, std::move(mmio), lo, hi});
}

void root_complex::add_interconnect_route(int i, pcie::window memory,
                                          std::vector<pcie::window> mmio, uint8_t lo, uint8_t hi) {
  m_remote_routes.add({m_params.root_ports + i, std::move(mmio), lo, hi});
  m_remote_memory.add({m_params.root_ports + i, {memory}, 1, 0});
}

void root_complex::receive(int in, tlm::tlm_generic_payload& gp) {
  // From a device: through its IOMMU domain. From the interconnect: the sending socket's
  // IOMMU has translated it already.
  if (is_root_port(in))
    m_iommu.receive(in, gp);
  else
    dispatch(in, gp, false);
}

void root_complex::dispatch(int in, tlm::tlm_generic_payload& gp, bool blocked) {
  const auto& h = transport::hdr(gp);
  if (blocked) {  // no byte may reach its target: a read gets UR, a write is dropped
    ++m_stats.iommu_faults;
    refused(gp, in);
  } else if (h.type == pcie::tlp_type::cpl || h.type == pcie::tlp_type::cpld) {
    completion(in, gp);
  } else {
    request(in, gp);
  }
}

// What request() and completion() do with a TLP from root port `in`, as far as how long its
// buffer is held: behind an IOMMU without an IOTLB every request walks first; a request to a
// peer (here or across the interconnect) leaves its forwarding latency later at the soonest,
// and so does a completion for another root port; host memory frees a write as its data path
// takes it and a read at once (nothing known). A translated address is routed where the
// IOMMU maps it (an unmapped one faults: nothing known).
uint64_t root_complex::least_hold_ps(int in, const tlm::tlm_generic_payload& gp) const {
  if (!is_root_port(in)) return 0;
  const auto& h = transport::hdr(gp);
  if (pcie::is_completion(h.type)) {
    if (h.requester_id == m_params.bdf) return 0;  // one of its proxied reads
    int out = m_root_routes.by_bus(pcie::bus_of(h.requester_id));
    if (out < 0) out = m_remote_routes.by_bus(pcie::bus_of(h.requester_id));
    return out >= 0 && out != in ? m_latency_ps : 0;
  }
  if (h.type == pcie::tlp_type::msg) return 0;
  uint64_t walk = 0, address = h.address;
  if (auto d = m_iommu.domains().find(h.requester_id); d != m_iommu.domains().end()) {
    const iommu::iommu_domain& domain = *d->second;
    const auto& p = domain.params();
    if (p.mode == iommu::iommu_mode::translating && !p.iotlb_entries)
      walk = pcie::ns_to_ps(p.miss_latency_ns);
    const auto mapped = domain.mapped_to(h.address, h.type != pcie::tlp_type::mrd);
    if (!mapped) return walk;
    address = *mapped;
  }
  return walk + forwarding_hold_ps(in, h, address, transport::meta(gp).tlps);
}

// As request() routes a request (a burst of `tlps`) for physical `address`.
uint64_t root_complex::forwarding_hold_ps(int in, const pcie::tlp_header& h, uint64_t address,
                                          uint32_t tlps) const {
  if (m_params.memory.contains(address)) return 0;
  // One re-emitted piece of a write on the link it leaves by.
  auto piece_ps = [&](int out, const p2p_forwarder& f) -> uint64_t {
    if (!f.params().tlp_bytes) return 0;
    pcie::tlp_header piece = h;
    piece.address = address;
    piece.length = f.params().tlp_bytes;
    return m_ports[out]->egress_serialization_ps(piece);
  };
  if (int out = m_root_routes.by_address(address); out >= 0)
    return m_ports[out]->link_up() ? m_p2p.least_hold_ps(h, tlps, piece_ps(out, m_p2p)) : 0;
  if (int out = m_remote_memory.by_address(address); out >= 0 && out != in) return 0;
  if (int out = m_remote_routes.by_address(address); out >= 0 && out != in)
    return m_interconnect_p2p.least_hold_ps(h, tlps, piece_ps(out, m_interconnect_p2p));
  return 0;
}

void root_complex::request(int in, tlm::tlm_generic_payload& gp) {
  const auto& h = transport::hdr(gp);
  if (m_params.memory.contains(h.address)) {
    m_write_commit.receive(in, gp);
    return;
  }
  if (int out = m_root_routes.by_address(h.address); out >= 0) {
    // A root port whose link is down answers non-posted requests for it with UR (PCIe Base
    // Spec 2.9.1); posted ones go on to the link, which discards them.
    if (!m_ports[out]->link_up() && pcie::is_non_posted(h.type)) {
      ++m_stats.unsupported_requests;
      refused(gp, in);
      return;
    }
    if (is_root_port(in)) {  // peer to peer inside this socket (or an ACS redirect back down)
      ++m_stats.p2p_requests;
      m_p2p.forward(gp, in, out);
    } else {  // from another socket: its root complex applied the cross-socket policy
      ++m_stats.interconnect_requests;
      transport::txn(gp).ext.ingress_port = in;
      send(out, gp, m_latency_ps);
    }
    return;
  }
  if (int out = m_remote_memory.by_address(h.address); out >= 0 && out != in) {
    ++m_stats.interconnect_requests;  // host memory of another socket: not peer to peer
    transport::txn(gp).ext.ingress_port = in;
    // The interconnect's latency stands for the whole hop to the remote home agent, and the
    // remote memory controller charges the root complex's latency as for a local read.
    send(out, gp, 0);
    return;
  }
  if (int out = m_remote_routes.by_address(h.address); out >= 0 && out != in) {
    ++m_stats.interconnect_requests;
    if (is_root_port(in)) {
      ++m_stats.interconnect_p2p_requests;
      m_interconnect_p2p.forward(gp, in, out);
    } else {
      transport::txn(gp).ext.ingress_port = in;
      send(out, gp, m_latency_ps);
    }
    return;
  }
  ++m_stats.unsupported_requests;
  refused(gp, in);
}

void root_complex::to_memory(int in, tlm::tlm_generic_payload& gp) {
  const auto& h = transport::hdr(gp);
  const bool write = h.type == pcie::tlp_type::mwr || pcie::is_atomic(h.type);
  ++(write ? m_stats.memory_writes : m_stats.memory_reads);
  const uint64_t offset = h.address - m_params.memory.base;
  if (write)
    m_cpu_cache.written(offset, h.length, h.type == pcie::tlp_type::mwr && h.attrs.no_snoop);
  // A write's buffer is free once the memory controller's data path has taken the data.
  m_ports[in]->free_buffer(
      gp, m_memory_port.serve(*m_ports[in], gp, offset, transport::ps(m_latency_ps),
                              write ? 0 : requester_mps(h.requester_id)));
  gp.release();
}

void root_complex::completion(int in, tlm::tlm_generic_payload& gp) {
  const auto& h = transport::hdr(gp);
  if (h.requester_id == m_params.bdf) {
    if (m_p2p.completion(gp, in) || m_interconnect_p2p.completion(gp, in)) return;
  } else {
    int out = m_root_routes.by_bus(pcie::bus_of(h.requester_id));
    if (out < 0) out = m_remote_routes.by_bus(pcie::bus_of(h.requester_id));
    if (out >= 0 && out != in) {
      transport::txn(gp).ext.ingress_port = in;
      // Completions from the interconnect were charged by the root complex that sent them.
      send(out, gp, is_root_port(in) ? m_latency_ps : 0);
      return;
    }
  }
  ++m_stats.unexpected_completions;
  free_buffer(in, gp);
  gp.release();
}

// What the root complex hands a port comes from what reaches its ports. A TLP from a device
// (past the IOMMU, which can only hold it longer) goes on the root complex's latency after it
// arrived or later: memory completions, peer-to-peer forwarding and UR completions all charge
// it. So does a request from the interconnect. A completion from the interconnect for a
// device goes on at once (the sending socket charged it): its link must promise that none
// comes sooner than `t`. Of the TLPs held for a page walk and of those on each wire, the
// first is the soonest (each goes on in order); only completions on the interconnect's wire
// are searched. Where each goes is not looked up: any might go to `out`.
// Toward the interconnect only completions can be promised (a request for another socket's
// memory goes there at once), and only with one interconnect port (with more, a completion
// may pass from one to another at once, and asking their links could go round in circles).
bool root_complex::promises_ready_no_sooner_than(int out, uint64_t t,
                                                 transport::promise_scope which) const {
  if (!is_root_port(out) &&
      (which != transport::promise_scope::completions || m_params.interconnect_ports > 1))
    return false;
  const uint64_t held = m_iommu.first_held_ready_ps();
  if (held != UINT64_MAX && held + m_latency_ps < t) return false;
  const uint64_t now = transport::now_ps();
  for (const auto& port : m_ports) {
    if (now + port->feed_lead_ps() + m_latency_ps < t) return false;
    const auto& wire = port->arriving();
    if (!wire.empty() && wire.front().at_ps + m_latency_ps < t) return false;  // the rest: later
    // Completions that come in here and may go on to `out` at once.
    if (is_root_port(port->index()) || !is_root_port(out)) continue;
    if (!port->feed_promises_arrival_no_sooner_than(t, transport::promise_scope::completions))
      return false;
    if (port->arriving_of(pcie::fc_class::completion))
      for (const transport::pcie_port::arrival& a : wire) {
        if (a.at_ps >= t) break;  // by arrival: the rest are later still
        if (pcie::is_completion(a.type) && a.requester_id != m_params.bdf) return false;
      }
  }
  return true;
}

void root_complex::refused(tlm::tlm_generic_payload& gp, int in) {
  dma::refuse_request(*m_ports[in], gp, m_params.bdf, pcie::cpl_status::ur,
                      transport::ps(m_latency_ps), &m_log);
}

void root_complex::send(int port, tlm::tlm_generic_payload& gp, uint64_t delay_ps) {
  m_ports[port]->send(gp, transport::ps(delay_ps));
}

void root_complex::free_buffer(int port, tlm::tlm_generic_payload& gp) {
  m_ports[port]->free_buffer(gp);
}

// Burst fidelity: `pieces`, the burst a burst `orig` was re-emitted as, started to leave;
// how long after that `orig`'s first TLP had left (its last piece started). A burst frees its
// buffer when its first TLP has left, as a switch's does; TLP by TLP, each piece's
// original is freed when its last piece starts.
uint64_t root_complex::first_tlp_left_ps(const tlm::tlm_generic_payload& orig,
                                         const tlm::tlm_generic_payload& pieces) const {
  const auto& m = transport::meta(pieces);
  if (!m.burst || m.tlps < 2 || m.told_at_last_start) return 0;  // told when its last TLP started
  const auto& o = transport::txn(orig).ext;
  const uint32_t first_bytes = o.meta.first_bytes ? o.meta.first_bytes : o.hdr.length;
  const uint64_t k = pcie::count_requests(o.hdr.address, first_bytes, m.unit);
  return m.span_ps * (k - 1) / (m.tlps - 1);
}

// The TLP leaves `after_ps` from now: the ingress buffer it (or its original) held is free
// then.
void root_complex::sent(int, tlm::tlm_generic_payload& gp, uint64_t after_ps) {
  auto& ext = transport::txn(gp).ext;
  if (ext.parent) {  // the last piece of a TLP we cut up: the original's buffer is free
    tlm::tlm_generic_payload& orig = *ext.parent;
    ext.parent = nullptr;
    m_ports[transport::txn(orig).ext.ingress_port]->free_buffer(
        orig, transport::ps(after_ps + first_tlp_left_ps(orig, gp)));
    orig.release();
  } else if (ext.ingress_port >= 0) {
    m_ports[ext.ingress_port]->free_buffer(gp, transport::ps(after_ps));
  }
}

}  // namespace p2psim::root_complex
