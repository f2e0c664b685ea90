#include "sim/topology/topology_graph.h"

#include <fmt/format.h>

#include <boost/graph/breadth_first_search.hpp>
#include <stdexcept>

namespace p2psim::topo {

std::string to_string(path_type p) {
  switch (p) {
    case path_type::X:
      return "X";
    case path_type::PIX:
      return "PIX";
    case path_type::PXB:
      return "PXB";
    case path_type::PHB:
      return "PHB";
    case path_type::NODE:
      return "NODE";
    case path_type::SYS:
      return "SYS";
  }
  return "?";
}

int topology_class(path_type p) {
  switch (p) {
    case path_type::PIX:
    case path_type::PXB:
      return 1;
    case path_type::PHB:
    case path_type::NODE:
      return 2;
    case path_type::SYS:
      return 3;
    default:
      return 0;
  }
}

std::string topology_class_name(int cls) {
  switch (cls) {
    case 1:
      return "PCIe switches only";
    case 2:
      return "single CPU/IOH";
    case 3:
      return "CPU/IOH <-> QPI/HT <-> CPU/IOH";
    default:
      return "";
  }
}

fabric_graph::fabric_graph(const topology& t) {
  auto add = [&](const std::string& name, kind k, const std::string& socket = "") {
    size_t v = boost::add_vertex(vertex_info{name, k, socket}, m_graph);
    m_index[name] = v;
    return v;
  };
  // A socket's host bridges hang off the socket vertex: a path between two of them crosses
  // the socket's internal interconnect (NODE).
  for (const auto& s : t.sockets) {
    size_t sv = add(s.name, kind::socket);
    for (int h = 0; h < s.host_bridges; ++h)
      boost::add_edge(sv, add(fmt::format("{}.hb{}", s.name, h), kind::host_bridge, s.name),
                      m_graph);
  }
  for (const auto& s : t.switches) add(s.name, kind::pcie_switch);
  for (const auto& d : t.devices) add(d.name, kind::device);
  for (const auto& l : t.links) {
    std::string up = t.find_socket(l.up) ? fmt::format("{}.hb{}", l.up, l.host_bridge) : l.up;
    auto u = m_index.find(up), d = m_index.find(l.down);
    if (u != m_index.end() && d != m_index.end()) boost::add_edge(u->second, d->second, m_graph);
  }
  for (const auto& ic : t.interconnects) {
    auto a = m_index.find(ic.a), b = m_index.find(ic.b);
    if (a != m_index.end() && b != m_index.end())
      boost::add_edge(a->second, b->second, edge_info{true}, m_graph);
  }
}

size_t fabric_graph::vertex(const std::string& name) const {
  auto it = m_index.find(name);
  if (it == m_index.end() || m_graph[it->second].what == kind::host_bridge)
    throw std::invalid_argument(fmt::format("no node named '{}' in the topology", name));
  return it->second;
}

std::vector<size_t> fabric_graph::path(const std::string& a, const std::string& b) const {
  const size_t src = vertex(a), dst = vertex(b);
  std::vector<size_t> pred(boost::num_vertices(m_graph));
  for (size_t i = 0; i < pred.size(); ++i) pred[i] = i;
  boost::breadth_first_search(m_graph, src,
                              boost::visitor(boost::make_bfs_visitor(
                                  boost::record_predecessors(pred.data(), boost::on_tree_edge()))));
  std::vector<size_t> out{dst};
  while (out.back() != src) {
    size_t p = pred[out.back()];
    if (p == out.back())
      throw std::invalid_argument(fmt::format("no path between '{}' and '{}'", a, b));
    out.push_back(p);
  }
  return {out.rbegin(), out.rend()};
}

path_type fabric_graph::classify(const std::string& a, const std::string& b) const {
  const std::vector<size_t> p = path(a, b);
  if (p.size() == 1) return path_type::X;
  int bridges = 0, switches = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const vertex_info& v = m_graph[p[i]];
    if (v.what == kind::host_bridge) ++bridges;
    // Endpoints of the path do not count as bridges traversed.
    if (v.what == kind::pcie_switch && i != 0 && i + 1 != p.size()) ++switches;
    if (i + 1 < p.size()) {
      auto [e, found] = boost::edge(p[i], p[i + 1], m_graph);
      if (found && m_graph[e].interconnect) return path_type::SYS;
    }
  }
  if (bridges >= 2) return path_type::NODE;
  if (bridges == 1) return path_type::PHB;
  return switches >= 2 ? path_type::PXB : path_type::PIX;
}

std::vector<std::string> fabric_graph::path_nodes(const std::string& a,
                                                  const std::string& b) const {
  std::vector<std::string> out;
  for (size_t v : path(a, b)) {
    const vertex_info& info = m_graph[v];
    const std::string& name = info.what == kind::host_bridge ? info.socket : info.name;
    if (out.empty() || out.back() != name) out.push_back(name);
  }
  return out;
}

path_type classify(const topology& t, const std::string& a, const std::string& b) {
  return fabric_graph(t).classify(a, b);
}

std::vector<std::string> path_nodes(const topology& t, const std::string& a, const std::string& b) {
  return fabric_graph(t).path_nodes(a, b);
}

}  // namespace p2psim::topo
