// check_topology: everything about a topology that can be wrong once each value is well-typed.
#include <fmt/format.h>

#include <boost/graph/connected_components.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <map>
#include <set>

#include "sim/config/error.h"
#include "sim/config/param_docs.h"
#include "sim/config/units.h"
#include "sim/topology/address_map.h"
#include "sim/topology/topology_graph.h"

namespace p2psim::topo {
namespace {

using config::error;
using config::format_size;

bool is_pow2(uint64_t v) {
  return v && !(v & (v - 1));
}

template <class T>
[[noreturn]] void fail_at(const T& element, const std::string& key, const std::string& msg) {
  throw error(loc_of(element, key), key, msg);
}

// mps/mrrs/rcb/tags of a device or of the topology's `pcie` section. The reader checks them
// in files; this catches a topology built in code (an NCCL import).
template <class T>
void check_pcie_settings(const T& x, const pcie::device_control& c) {
  for (auto [key, v] : {std::pair{"mps", c.mps}, std::pair{"mrrs", c.mrrs}})
    if (!(is_pow2(v) && v >= 128 && v <= 4096))
      fail_at(x, key,
              fmt::format("expected a power of two from 128B to 4KiB, got {}", format_size(v)));
  if (c.rcb != 64 && c.rcb != 128)
    fail_at(x, "rcb", fmt::format("expected 64B or 128B, got {}", format_size(c.rcb)));
  if (c.tags < 1 || c.tags > 1024)
    fail_at(x, "tags", fmt::format("expected 1 to 1024 tags, got {}", c.tags));
}

void check_bar(const device_params& d, const std::string& key, uint64_t size,
               const std::optional<uint64_t>& address, bool optional) {
  if (optional && size == 0) {
    if (address) fail_at(d, key + "_address", fmt::format("{} is 0, so it has no address", key));
    return;
  }
  if (!is_pow2(size) || size < 4096)
    fail_at(d, key,
            fmt::format("a BAR size must be a power of two of at least 4KiB, got {}",
                        format_size(size)));
  if (!address) return;
  if (*address % size != 0)
    fail_at(d, key + "_address",
            fmt::format("{} is not aligned to the BAR's size ({}): BARs are naturally aligned",
                        config::format_address(*address), format_size(size)));
  if (*address > ~uint64_t(0) - size)  // also rejects ending exactly at 2^64
    fail_at(d, key + "_address",
            fmt::format("{} + {} runs off the end of the 64-bit address space",
                        config::format_address(*address), format_size(size)));
}

void check_device(const device_params& d) {
  check_pcie_settings(d, d.control);
  check_bar(d, "bar0", d.bar0_bytes, d.bar0_address, false);
  for (const auto& b : d.settings->bars()) check_bar(d, b.key, b.bytes, b.address, b.may_be_zero);
  if (auto p = d.settings->check()) {
    // "{key}" in the message: that setting's value as a file writes it.
    std::string message = p->message;
    for (const auto& b : d.settings->parameters()) {
      const std::string mark = "{" + b.decl->key + "}";
      const std::string value = config::format_value(*b.decl, b.get());
      for (auto at = message.find(mark); at != std::string::npos;
           at = message.find(mark, at + value.size()))
        message.replace(at, mark.size(), value);
    }
    fail_at(d, p->key, message);
  }
}

// "line 4" for a place in the same file as `here`, else the full location.
std::string where(const config::source_loc& there, const config::source_loc& here) {
  if (there.file == here.file && there.line) return fmt::format("line {}", there.line);
  return there.str();
}

enum class node_kind { socket, pcie_switch, device };
const char* kind_name(node_kind k) {
  return k == node_kind::socket ? "socket" : k == node_kind::pcie_switch ? "switch" : "device";
}
struct node_ref {
  node_kind kind;
  config::source_loc loc;
};

std::map<std::string, node_ref> collect_names(const topology& t) {
  std::map<std::string, node_ref> nodes;
  auto add = [&](const auto& x, node_kind k) {
    auto [it, fresh] = nodes.emplace(x.name, node_ref{k, x.loc});
    if (!fresh)
      fail_at(x, "name",
              fmt::format("duplicate name '{}' (already a {} at {})", x.name,
                          kind_name(it->second.kind), where(it->second.loc, x.loc)));
  };
  for (const auto& s : t.sockets) add(s, node_kind::socket);
  for (const auto& s : t.switches) add(s, node_kind::pcie_switch);
  for (const auto& d : t.devices) add(d, node_kind::device);
  return nodes;
}

void check_link(const topology& t, const link_params& l,
                const std::map<std::string, node_ref>& nodes) {
  auto up = nodes.find(l.up), down = nodes.find(l.down);
  if (up == nodes.end()) fail_at(l, "up", fmt::format("no socket or switch named '{}'", l.up));
  if (down == nodes.end())
    fail_at(l, "down", fmt::format("no switch or device named '{}'", l.down));
  if (up->second.kind == node_kind::device)
    fail_at(l, "up",
            fmt::format("'{}' is a device; a link's up end is a socket or a switch", l.up));
  if (down->second.kind == node_kind::socket)
    fail_at(l, "down",
            fmt::format("'{}' is a socket; a link's down end is a switch or a device", l.down));
  if (const socket_params* s = t.find_socket(l.up)) {
    if (l.host_bridge >= s->host_bridges)
      fail_at(
          l, "host_bridge",
          fmt::format("socket {} has {} host bridge{} (0..{}), got {}", s->name, s->host_bridges,
                      s->host_bridges == 1 ? "" : "s", s->host_bridges - 1, l.host_bridge));
    if (l.gen > s->platform.max_gen)
      fail_at(l, "gen",
              fmt::format("root port of {} (platform {}) supports up to Gen{}, got Gen{}", s->name,
                          s->platform_name.empty() ? "default" : s->platform_name,
                          s->platform.max_gen, l.gen));
  } else if (l.key_locs.count("host_bridge") && l.host_bridge != 0) {
    fail_at(l, "host_bridge", "only a link from a socket has a host_bridge");
  }
  // A receive buffer must hold the largest TLP, or flow control stalls forever (PCIe Base
  // Spec 2.6.1: a data credit is 16 bytes; 0 advertises infinite credits).
  uint32_t mps = t.pcie.mps;
  for (const auto& d : t.devices) mps = std::max(mps, d.control.mps);
  const uint32_t need = mps / 16;
  for (auto [name, value] : {std::pair{"pd", l.credits.pd}, std::pair{"cpld", l.credits.cpld}})
    if (value && value < need)
      fail_at(l, "credits",
              fmt::format("credits.{} = {} cannot hold one {} B TLP ({} data credits of 16 B): "
                          "the link would deadlock",
                          name, value, mps, need));
}

// Links as a directed graph up -> down; a back edge of a depth-first search closes a cycle.
void check_cycles(const topology& t) {
  using digraph =
      boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                            boost::property<boost::edge_index_t, size_t>>;
  std::map<std::string, size_t> index;
  std::vector<std::string> names;
  for (const auto& l : t.links)
    for (const auto* n : {&l.up, &l.down})
      if (index.emplace(*n, names.size()).second) names.push_back(*n);
  digraph g(names.size());
  for (size_t i = 0; i < t.links.size(); ++i)
    boost::add_edge(index[t.links[i].up], index[t.links[i].down], i, g);

  struct found_cycle {
    size_t link, from, to;
  };
  struct visitor : boost::default_dfs_visitor {
    std::vector<size_t>* pred;
    void tree_edge(digraph::edge_descriptor e, const digraph& gr) {
      (*pred)[boost::target(e, gr)] = boost::source(e, gr);
    }
    void back_edge(digraph::edge_descriptor e, const digraph& gr) {
      throw found_cycle{boost::get(boost::edge_index, gr, e), boost::source(e, gr),
                        boost::target(e, gr)};
    }
  };
  std::vector<size_t> pred(names.size());
  visitor vis;
  vis.pred = &pred;
  try {
    boost::depth_first_search(g, boost::visitor(vis));
  } catch (const found_cycle& c) {
    std::vector<std::string> cycle{names[c.to]};
    for (size_t v = c.from; v != c.to; v = pred[v]) cycle.insert(cycle.begin() + 1, names[v]);
    cycle.push_back(names[c.to]);
    std::string text;
    for (const auto& n : cycle) text += (text.empty() ? "" : " -> ") + n;
    fail_at(t.links[c.link], "down", fmt::format("links form a cycle: {}", text));
  }
}

void check_sockets_connected(const topology& t) {
  if (t.sockets.size() < 2) return;
  boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS> g(t.sockets.size());
  for (const auto& ic : t.interconnects)
    boost::add_edge(size_t(t.socket_index(ic.a)), size_t(t.socket_index(ic.b)), g);
  std::vector<int> component(t.sockets.size());
  boost::connected_components(g, component.data());
  for (size_t i = 1; i < t.sockets.size(); ++i)
    if (component[i] != component[0])
      throw error(t.sockets[i].loc, "",
                  fmt::format("sockets {} and {} have no link between them: add an interconnect "
                              "(directly or through other sockets)",
                              t.sockets[0].name, t.sockets[i].name));
}

}  // namespace

void check_topology(const topology& t) {
  if (t.sockets.empty())
    throw error(loc_of(t, "sockets"), "sockets", "a topology needs at least one socket");
  check_pcie_settings(t.pcie, t.pcie);
  const auto nodes = collect_names(t);
  for (const auto& d : t.devices) check_device(d);

  std::set<std::string> ic_names;
  for (const auto& ic : t.interconnects) {
    if (!ic_names.insert(ic.name).second)
      fail_at(ic, "name", fmt::format("duplicate interconnect name '{}'", ic.name));
    for (const auto* end : {&ic.a, &ic.b}) {
      auto it = nodes.find(*end);
      if (it == nodes.end()) fail_at(ic, "between", fmt::format("no socket named '{}'", *end));
      if (it->second.kind != node_kind::socket)
        fail_at(ic, "between",
                fmt::format("'{}' is a {}, not a socket", *end, kind_name(it->second.kind)));
    }
    if (ic.a == ic.b)
      fail_at(ic, "between", fmt::format("interconnect {} connects {} to itself", ic.name, ic.a));
  }

  std::map<std::string, const link_params*> upstream;
  for (const auto& l : t.links) {
    check_link(t, l, nodes);
    auto [it, fresh] = upstream.emplace(l.down, &l);
    if (!fresh)
      fail_at(l, "down",
              fmt::format("{} already has an upstream link (from {} at {}); a node has "
                          "exactly one",
                          l.down, it->second->up, where(it->second->loc, l.loc)));
  }
  for (const auto& s : t.switches)
    if (!upstream.count(s.name))
      throw error(s.loc, "",
                  fmt::format("switch {} has no upstream link, so it is unreachable "
                              "(add a link with down: {})",
                              s.name, s.name));
  for (const auto& d : t.devices)
    if (!upstream.count(d.name))
      throw error(d.loc, "",
                  fmt::format("device {} has no upstream link, so it is unreachable "
                              "(add a link with down: {})",
                              d.name, d.name));
  check_cycles(t);

  for (const auto& s : t.switches) {
    size_t below = t.links_below(s.name).size();
    if (s.ports > 0 && below > size_t(s.ports))
      fail_at(
          s, "ports",
          fmt::format("switch {} has {} downstream links but {} ports", s.name, below, s.ports));
    if (below > 32)
      throw error(s.loc, "",
                  fmt::format("switch {} has {} downstream links; at most 32 fit on "
                              "its internal bus",
                              s.name, below));
  }
  for (const auto& s : t.sockets)
    for (int h = 0; h < s.host_bridges; ++h) {
      int ports = 0;
      for (const auto* l : t.links_below(s.name))
        if (l->host_bridge == h && ++ports > 31)
          fail_at(*l, "host_bridge",
                  fmt::format("host bridge {} of {} has more than 31 root ports", h, s.name));
    }
  check_sockets_connected(t);
  enumerate(t);  // address conflicts
}

}  // namespace p2psim::topo
