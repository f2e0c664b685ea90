#include "sim/litmus/reference/fabric.h"

#include "sim/topology/topology_graph.h"

namespace p2psim::litmus::reference {

fabric::fabric(const topo::topology& t) : m_topo(t) {
  int id = 1;
  for (const auto& d : t.devices) m_ids[d.name] = id++;
  for (const auto& s : t.sockets) m_ids[s.name] = id++;
}

int fabric::id_of(const std::string& node) const {
  return m_ids.at(node);
}

int fabric::queue(const std::string& from, const std::string& to) const {
  auto [it, added] = m_queues.try_emplace({from, to}, int(m_queue_names.size()));
  if (added) m_queue_names.push_back(from + ">" + to);
  return it->second;
}

leg fabric::make_leg(const std::vector<std::string>& nodes, size_t from, size_t to,
                     uint32_t pieces) const {
  leg l;
  for (size_t i = from; i < to; ++i) {
    l.queues.push_back(queue(nodes[i], nodes[i + 1]));
    // A root complex re-emits what it forwards from one port to another in its pieces.
    const bool forwarded = i > from && m_topo.find_socket(nodes[i]);
    l.pieces.push_back(forwarded ? pieces : 0);
  }
  return l;
}

route fabric::request(const std::string& device, const std::string& memory, tlp_kind kind) const {
  const std::vector<std::string> nodes = topo::path_nodes(m_topo, device, memory);
  route r;
  r.completer = id_of(memory);
  const bool peer = !m_topo.find_socket(memory);
  // The root complexes between two devices: the first (where the request enters the root
  // complex) decides, with the interconnect's policy where the path crosses to another
  // socket (the stricter of its two sockets').
  size_t rc = 0;
  uint32_t pieces = 0;
  for (size_t i = 1; i + 1 < nodes.size() && peer; ++i) {
    const topo::socket_params* s = m_topo.find_socket(nodes[i]);
    if (!s) continue;
    const topo::socket_params* next = m_topo.find_socket(nodes[i + 1]);
    root_complex::p2p_policy write = s->platform.p2p.write, read = s->platform.p2p.read;
    if (next) {
      write = root_complex::stricter(s->platform.interconnect_p2p_write,
                                     next->platform.interconnect_p2p_write);
      read = root_complex::stricter(s->platform.interconnect_p2p_read,
                                    next->platform.interconnect_p2p_read);
    }
    if (kind == tlp_kind::atomic)
      r.refused = "a root complex does not route AtomicOps between ports";
    else if (kind == tlp_kind::posted && !write.routed)
      r.refused = s->name + " does not route peer-to-peer writes";
    else if (kind == tlp_kind::read && !read.routed)
      r.refused = s->name + " does not route peer-to-peer reads";
    if (!rc) {
      rc = i;
      pieces = s->platform.p2p.tlp_bytes;
    }
  }
  const size_t last = nodes.size() - 1;
  if (kind == tlp_kind::read && rc) {
    r.proxied = true;
    r.proxy = id_of(nodes[rc]);
    r.out = make_leg(nodes, 0, rc, 0);
    r.proxy_out = make_leg(nodes, rc, last, 0);
    r.proxy_out.pieces.front() = pieces;  // its own requests, in the pieces it re-emits
    std::vector<std::string> reversed(nodes.rbegin(), nodes.rend());
    r.proxy_back = make_leg(reversed, 0, last - rc, 0);
    r.back = make_leg(reversed, last - rc, last, 0);
    return r;
  }
  r.out = make_leg(nodes, 0, last, pieces);
  // A root complex that may commit RO writes out of order: its way into host memory is one
  // more queue, under the same table.
  if (const topo::socket_params* s = m_topo.find_socket(memory);
      s && s->platform.reorders_relaxed_writes) {
    r.out.queues.push_back(queue(memory, "memory"));
    r.out.pieces.push_back(0);
  }
  std::vector<std::string> reversed(nodes.rbegin(), nodes.rend());
  r.back = make_leg(reversed, 0, last, 0);
  return r;
}

}  // namespace p2psim::litmus::reference
