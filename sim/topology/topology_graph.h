// The topology as a graph: structural checks, and the path between two nodes classified the
// way `nvidia-smi topo -m` and the GPUDirect RDMA guide (13.3, 5.4) do.
#pragma once

#include <boost/graph/adjacency_list.hpp>

#include <map>
#include <string>
#include <vector>

#include "sim/topology/topology.h"

namespace p2psim::topo {

// Every check of docs/formats-topology.md ("Checks"): names, references, link directions,
// one upstream link per node, reachability, cycles, ports, gens and widths, PCIe settings,
// BAR sizes and addresses (via enumerate), socket connectivity. Throws config::error at the
// offending key. load_topology calls it; call it yourself for topologies built in code.
void check_topology(const topology& t);

// nvidia-smi's names, from nearest to farthest.
enum class path_type {
  X,     // the node itself
  PIX,   // at most one PCIe switch
  PXB,   // several PCIe switches, no host bridge
  PHB,   // through one host bridge (root complex)
  NODE,  // through two host bridges of one socket
  SYS,   // across the socket interconnect (QPI/UPI)
};

std::string to_string(path_type p);  // "PIX"
// GPUDirect RDMA topology class: 1 (PIX, PXB), 2 (PHB, NODE), 3 (SYS), 0 (X).
int topology_class(path_type p);
// The guide's name of a class: 1 "PCIe switches only", 2 "single CPU/IOH",
// 3 "CPU/IOH <-> QPI/HT <-> CPU/IOH"; "" for others.
std::string topology_class_name(int cls);

// An undirected graph of sockets, their host bridges, switches and devices, with link and
// interconnect edges; build once for many path queries. Needs a checked topology.
class fabric_graph {
 public:
  explicit fabric_graph(const topology& t);

  // Unknown node names -> std::invalid_argument.
  path_type classify(const std::string& a, const std::string& b) const;
  // Topology node names from a to b (host bridges appear as their socket, once).
  std::vector<std::string> path_nodes(const std::string& a, const std::string& b) const;

  enum class kind { socket, host_bridge, pcie_switch, device };
  struct vertex_info {
    std::string name;  // host bridges: "<socket>.hb<i>"
    kind what = kind::device;
    std::string socket;  // for host bridges
  };
  struct edge_info {
    bool interconnect = false;
  };
  using graph =
      boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, vertex_info, edge_info>;
  const graph& g() const { return m_graph; }

 private:
  std::vector<size_t> path(const std::string& a, const std::string& b) const;
  size_t vertex(const std::string& name) const;

  graph m_graph;
  std::map<std::string, size_t> m_index;
};

// One-off forms of fabric_graph's queries.
path_type classify(const topology& t, const std::string& a, const std::string& b);
std::vector<std::string> path_nodes(const topology& t, const std::string& a, const std::string& b);

}  // namespace p2psim::topo
