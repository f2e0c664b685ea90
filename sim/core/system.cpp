#include "sim/core/system.h"

#include <fmt/format.h>

#include <deque>
#include <new>
#include <set>

#include "models/device/factories.h"
#include "models/gpu/gpu_device.h"
#include "models/memory/backing_store.h"
#include "models/pcie/address.h"
#include "models/pcie/time_units.h"
#include "models/pcie/window.h"
#include "models/transport/sim_clock.h"
#include "sim/config/error.h"
#include "sim/config/units.h"

namespace p2psim::core {

namespace {

pcie::window win(const topo::addr_range& r) {
  return {r.base, r.size};
}

iommu::iommu_params iommu_params_of(const iommu::iommu_spec& spec) {
  iommu::iommu_params p;
  static_cast<iommu::iommu_spec&>(p) = spec;
  // IOVAs stay below the MMIO apertures, as Linux reserves PCI windows in the IOVA space: a
  // switch routes by address before the IOMMU sees a request, and must not take an IOVA for
  // a BAR below it.
  p.iova_limit = topo::mmio_base;
  return p;
}

// Endpoints and root ports advertise infinite completion credits (PCIe Base Spec 2.6.1);
// switch ports advertise what the link's `credits` say.
pcie::credit_limits receiver_credits(const pcie::credit_limits& c, bool infinite_completions) {
  pcie::credit_limits l = c;
  if (infinite_completions) l.cplh = l.cpld = 0;
  return l;
}

// How a receiver holds a TLP before it can free the buffer, for burst fidelity's credit loops
// (link_channel::pace_bursts_by_credits). Usually: a switch its latency (from the header,
// cut-through), a root port its root complex's (and, behind a translating IOMMU, a page walk,
// which holds the buffer), an endpoint nothing (its data path drains at once, or is the
// limit). At the least: a switch still its latency, a root port or endpoint nothing known
// for every TLP alike (a root complex says more per TLP: tlp_handler::least_hold_ps).
link::receiver_hold receiver_hold_of(const topo::topology& t, const std::string& node) {
  if (const auto* s = t.find_switch(node)) {
    const uint64_t ps = pcie::ns_to_ps(s->latency_ns);
    return {ps, ps, !s->cut_through};
  }
  if (const auto* s = t.find_socket(node)) {
    double ns = s->platform.rc_latency_ns;
    if (s->iommu.mode == iommu::iommu_mode::translating) ns += s->iommu.miss_latency_ns;
    return {pcie::ns_to_ps(ns), 0, true};
  }
  return {0, 0, true};
}

// Builds a model that backs `bytes` of memory. The backing store reserves its table of chunks
// (8 bytes per 16 KiB) up front, so a memory larger than this machine can reserve that for is
// an input too large to simulate, named at its key, not an internal error.
template <class F>
auto backed(F&& make, const config::source_loc& where, const std::string& key, uint64_t bytes) {
  try {
    return make();
  } catch (const std::bad_alloc&) {
    throw config::error(
        where, key,
        fmt::format("{} is more memory than this machine can simulate: the table of its pages "
                    "alone needs {} of address space",
                    config::format_size(bytes),
                    config::format_size(bytes / memory::backing_store::chunk_bytes * 8)));
  }
}

}  // namespace

fabric_system::fabric_system(const topo::topology& t, const topo::address_map& a, bool bursts,
                             const pcie::order_policy& order)
    : m_topo(t), m_addr(a), m_bursts(bursts), m_order(order) {
  transport::check_time_resolution();
  build_sockets();
  build_switches();
  build_devices();
  build_links();
  build_interconnects();
  build_iommus();
  tell_requester_mps();
}

fabric_system::~fabric_system() = default;

namespace {

// What `say` tells of each direction of every link and interconnect that says something.
template <typename Say>
std::vector<std::string> each_direction(const auto& links, const auto& interconnects, Say say) {
  std::vector<std::string> out;
  auto add = [&](const std::string& what, const link::link_channel& c) {
    if (std::string b = say(c); !b.empty()) out.push_back(what + ": " + b);
  };
  for (const auto& l : links) {
    add("link " + l.name + " down", l.link->downstream());
    add("link " + l.name + " up", l.link->upstream());
  }
  for (const auto& q : interconnects) {
    add("interconnect " + q.name + " a->b", q.link->a_to_b());
    add("interconnect " + q.name + " b->a", q.link->b_to_a());
  }
  return out;
}

}  // namespace

std::vector<std::string> fabric_system::blocked_links() const {
  return each_direction(m_link_list, m_interconnect_list,
                        [](const link::link_channel& c) { return c.blocked(); });
}

std::vector<std::string> fabric_system::unbalanced_credits() const {
  return each_direction(m_link_list, m_interconnect_list,
                        [](const link::link_channel& c) { return c.unbalanced_credits(); });
}

void fabric_system::build_sockets() {
  for (const auto& s : m_topo.sockets) {
    const auto& sa = m_addr.sockets.at(s.name);
    root_complex::rc_params p;
    p.bdf = sa.rc_bdf;
    p.memory = win(sa.memory);
    p.platform = s.platform;
    p.root_ports = 0;
    for (const auto& l : m_topo.links) p.root_ports += l.up == s.name;
    p.interconnect_ports = 0;
    for (const auto& q : m_topo.interconnects)
      p.interconnect_ports += q.a == s.name || q.b == s.name;
    m_sockets[s.name] = backed(
        [&] {
          return std::make_unique<root_complex::root_complex>(s.name.c_str(), p, m_pool, m_log,
                                                              m_order);
        },
        topo::loc_of(s, "memory"), "memory", s.memory_bytes);
  }
}

void fabric_system::build_switches() {
  for (const auto& s : m_topo.switches) {
    pcie_switch::switch_params p;
    static_cast<pcie_switch::switch_spec&>(p) = s;
    p.downstream_ports = 0;
    for (const auto& l : m_topo.links) p.downstream_ports += l.up == s.name;
    p.downstream_ports = std::max(p.downstream_ports, s.ports);
    // With a translating IOMMU, peer requests must reach it to be translated: switches below
    // it redirect them up as with ACS P2P Request Redirect (which Linux enables on switch
    // ports when an IOMMU is active), so P2P under a switch goes through the root complex
    // (docs/design.md, "Topology classes").
    p.acs_redirect = s.acs_redirect || translating(s.name);
    p.bdf = pcie::make_bdf(m_addr.switch_bus.at(s.name), 0, 0);
    m_switches[s.name] = std::make_unique<pcie_switch::pcie_switch>(s.name.c_str(), p, m_log);
  }
}

// Every kind builds its own model from its settings (models/device/device_model.h).
void fabric_system::build_devices() {
  for (const auto& d : m_topo.devices) {
    const auto& da = m_addr.devices.at(d.name);
    const auto& c = d.control;
    device::placement at;
    at.name = d.name;
    at.bdf = da.bdf;
    at.bar0 = win(da.bar0);
    for (const auto& b : da.bars) at.bars.push_back(win(b.range));
    at.control = c;
    at.requester = {da.bdf, c.mps, c.mrrs, c.tags};
    if (m_bursts) at.requester.burst_bytes = translating(d.name) ? 4096 : burst_bytes;
    at.pool = &m_pool;
    at.log = &m_log;
    at.order = &m_order;
    const auto& factory = device::factory_for(d.kind().name());
    m_devices[d.name] = backed([&] { return factory.elaborate(*d.settings, at); },
                               topo::loc_of(d, d.settings->local_key()), d.settings->local_key(),
                               d.settings->local_bytes());
  }
}

transport::pcie_port& fabric_system::upstream_port_for(const topo::link_params& l, int index) {
  if (auto it = m_sockets.find(l.up); it != m_sockets.end()) return it->second->root_port(index);
  return m_switches.at(l.up)->downstream(index);
}

transport::pcie_port& fabric_system::downstream_port_for(const std::string& node) {
  if (auto it = m_switches.find(node); it != m_switches.end()) return it->second->upstream();
  return m_devices.at(node)->port();
}

void fabric_system::build_links() {
  std::map<std::string, int> next_port;  // per upstream node, in file order
  for (const auto& l : m_topo.links) {
    int index = next_port[l.up]++;
    const bool up_is_socket = m_sockets.count(l.up) > 0;
    const bool down_is_switch = m_switches.count(l.down) > 0;
    link::pcie_link_params p;
    static_cast<link::link_spec&>(p) = l;
    p.mps = m_topo.pcie.mps;
    if (const auto* d = m_topo.find_device(l.down)) p.mps = d->control.mps;
    p.down_credits = receiver_credits(l.credits, !down_is_switch);
    if (const auto* d = m_topo.find_device(l.down)) p.down_dllps = d->dllps;
    if (up_is_socket) p.up_dllps = m_topo.find_socket(l.up)->platform.root_port_dllps;
    p.up_credits = receiver_credits(l.credits, up_is_socket);
    std::string name = "link_" + l.down;
    auto lk = std::make_unique<link::pcie_link>(name.c_str(), p, m_order);
    lk->connect(upstream_port_for(l, index), downstream_port_for(l.down));
    if (m_bursts)
      lk->pace_bursts_by_credits(receiver_hold_of(m_topo, l.down), receiver_hold_of(m_topo, l.up));

    const auto& w = m_addr.ports.at(l.down);
    if (up_is_socket)
      m_sockets[l.up]->set_root_port_route(index, {win(w.mmio)}, w.buses.secondary,
                                           w.buses.subordinate);
    else
      m_switches[l.up]->set_route(index, {win(w.mmio)}, w.buses.secondary, w.buses.subordinate,
                                  down_is_switch);
    m_link_list.push_back({l.down, lk.get()});
    m_links.push_back(std::move(lk));
  }
}

void fabric_system::build_interconnects() {
  std::map<std::string, int> next_port;
  // port index of each interconnect at each of its sockets, and the socket graph
  std::map<std::string, std::vector<std::pair<std::string, int>>> neighbours;
  for (const auto& q : m_topo.interconnects) {
    int ia = next_port[q.a]++, ib = next_port[q.b]++;
    link::interconnect_link_params p;
    static_cast<link::interconnect_spec&>(p) = q;
    auto lk = std::make_unique<link::interconnect_link>(q.name.c_str(), p, m_order);
    lk->connect(m_sockets[q.a]->interconnect_port(ia), m_sockets[q.b]->interconnect_port(ib));
    neighbours[q.a].push_back({q.b, ia});
    neighbours[q.b].push_back({q.a, ib});
    m_interconnect_list.push_back({q.name, lk.get()});
    m_interconnects.push_back(std::move(lk));
  }
  // Each socket reaches every other through the first hop of a shortest path (BFS).
  for (const auto& s : m_topo.sockets) {
    std::map<std::string, int> first_hop{{s.name, -1}};
    std::deque<std::string> todo{s.name};
    while (!todo.empty()) {
      std::string cur = todo.front();
      todo.pop_front();
      for (const auto& [next, port] : neighbours[cur]) {
        if (first_hop.count(next)) continue;
        first_hop[next] = cur == s.name ? port : first_hop[cur];
        todo.push_back(next);
      }
    }
    for (const auto& [other, port] : first_hop) {
      if (port < 0) continue;
      const auto& oa = m_addr.sockets.at(other);
      m_sockets[s.name]->add_interconnect_route(port, win(oa.memory), {win(oa.mmio)},
                                                oa.buses.secondary, oa.buses.subordinate);
    }
  }
}

bool fabric_system::translating(const std::string& node) const {
  const auto* s = m_topo.find_socket(m_addr.socket_of.at(node));
  return s && s->iommu.mode == iommu::iommu_mode::translating;
}

// Every root complex knows each device's MPS, by requester ID: the pieces it may answer that
// device's reads of host memory in.
void fabric_system::tell_requester_mps() {
  for (const auto& d : m_topo.devices)
    for (auto& [name, rc] : m_sockets)
      rc->set_requester_mps(m_addr.devices.at(d.name).bdf, d.control.mps);
}

// Every device gets a domain in its socket's root complex, keyed by its requester ID.
void fabric_system::build_iommus() {
  for (const auto& d : m_topo.devices) {
    const auto& s = *m_topo.find_socket(m_addr.socket_of.at(d.name));
    if (s.iommu.mode == iommu::iommu_mode::off) continue;
    m_sockets.at(s.name)->add_iommu_domain(m_addr.devices.at(d.name).bdf, iommu_params_of(s.iommu));
  }
}

iommu::iommu_domain* fabric_system::iommu_for(const std::string& device) {
  auto da = m_addr.devices.find(device);
  if (da == m_addr.devices.end()) return nullptr;
  return m_sockets.at(m_addr.socket_of.at(device))->iommu_domain_for(da->second.bdf);
}

device::device_model* fabric_system::find_device(const std::string& n) {
  auto it = m_devices.find(n);
  return it == m_devices.end() ? nullptr : it->second.get();
}
gpu::gpu* fabric_system::find_gpu(const std::string& n) {
  auto* d = find_device(n);
  return d ? gpu::gpu_of(*d) : nullptr;
}
dma::dma_initiator* fabric_system::find_initiator(const std::string& n) {
  auto* d = find_device(n);
  return d ? d->initiator() : nullptr;
}
root_complex::root_complex* fabric_system::find_socket(const std::string& n) {
  auto it = m_sockets.find(n);
  return it == m_sockets.end() ? nullptr : it->second.get();
}

const root_complex::root_complex* fabric_system::find_socket(const std::string& n) const {
  auto it = m_sockets.find(n);
  return it == m_sockets.end() ? nullptr : it->second.get();
}

}  // namespace p2psim::core
