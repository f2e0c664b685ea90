#include "sim/topology/topo_report.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <boost/graph/graphviz.hpp>
#include <cctype>
#include <utility>

#include "models/device/registry.h"
#include "sim/config/param_docs.h"
#include "sim/config/units.h"
#include "sim/topology/topology_graph.h"

namespace p2psim::topo {
namespace {

using config::format_address;
using config::format_size;

std::string bdf_text(uint16_t bdf) {
  return fmt::format("{:02x}:{:02x}.{}", bdf >> 8, (bdf >> 3) & 31, bdf & 7);
}

std::string buses_text(const bus_range& b) {
  if (b.secondary == b.subordinate) return fmt::format("bus {:02x}", b.secondary);
  return fmt::format("buses {:02x}-{:02x}", b.secondary, b.subordinate);
}

std::string window_text(const addr_range& r) {
  if (!r.size) return "no window";
  return fmt::format("window {}-{}", format_address(r.base), format_address(r.end() - 1));
}

std::string bar_text(const std::string& name, const addr_range& r) {
  return fmt::format("{} {} @ {}", name, format_size(r.size), format_address(r.base));
}

std::string upper(std::string s) {
  for (auto& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

class tree_printer {
 public:
  tree_printer(std::ostream& os, const topology& t, const address_map& m)
      : m_os(os), m_t(t), m_map(m) {}

  void socket(const socket_params& s) {
    const socket_addresses& sa = m_map.sockets.at(s.name);
    fmt::print(m_os, "{} ({}): memory {} @ {}, MMIO {}-{}, {}, IOMMU {}\n", s.name,
               s.platform_name.empty() ? "default platform" : s.platform_name,
               format_size(s.memory_bytes), format_address(sa.memory.base),
               format_address(sa.mmio.base), format_address(sa.mmio.end() - 1),
               buses_text(sa.buses), iommu::to_string(s.iommu.mode));
    for (int h = 0; h < s.host_bridges; ++h) {
      std::vector<const link_params*> ports;
      for (const auto* l : m_t.links_below(s.name))
        if (l->host_bridge == h) ports.push_back(l);
      uint8_t bus = sa.root_buses.at(size_t(h));
      bool last_hb = h + 1 == s.host_bridges;
      fmt::print(m_os, "{}-[{:02x}] host bridge {}{}\n", last_hb ? "\\" : "+", bus, h,
                 h == 0 ? " (" + bdf_text(sa.rc_bdf) + ")" : "");
      std::string prefix = last_hb ? "   " : "|  ";
      for (size_t i = 0; i < ports.size(); ++i)
        port(*ports[i], make_bdf(bus, uint8_t(i + 1), 0), "root port", prefix,
             i + 1 == ports.size());
    }
  }

 private:
  void port(const link_params& l, uint16_t bdf, const char* kind, const std::string& prefix,
            bool last) {
    const port_window& w = m_map.ports.at(l.down);
    fmt::print(m_os, "{}{}-{} {} -> {}, Gen{} x{}, {}, {}\n", prefix, last ? "\\" : "+",
               bdf_text(bdf), kind, l.down, l.gen, l.width, buses_text(w.buses),
               window_text(w.mmio));
    std::string inner = prefix + (last ? "   " : "|  ");
    const uint16_t below = make_bdf(w.buses.secondary, 0, 0);
    if (const device_params* d = m_t.find_device(l.down)) {
      const device_addresses& a = m_map.devices.at(d->name);
      std::string bars = bar_text("BAR0", a.bar0);
      for (const auto& b : a.bars)
        if (b.range.size) bars += ", " + bar_text(b.name, b.range);
      fmt::print(m_os, "{}\\-{} {} ({}{}): {}\n", inner, bdf_text(a.bdf), d->name,
                 d->kind().title(), d->model.empty() ? "" : " " + d->model, bars);
      return;
    }
    const uint8_t internal = m_map.switch_bus.at(l.down);
    const switch_params* sw = m_t.find_switch(l.down);
    fmt::print(m_os, "{}\\-{} {} (switch{}, internal bus {:02x})\n", inner, bdf_text(below), l.down,
               sw && !sw->model.empty() ? " " + sw->model : "", internal);
    std::vector<const link_params*> children = m_t.links_below(l.down);
    for (size_t i = 0; i < children.size(); ++i)
      port(*children[i], make_bdf(internal, uint8_t(i), 0), "port", inner + "   ",
           i + 1 == children.size());
  }

  std::ostream& m_os;
  const topology& m_t;
  const address_map& m_map;
};

}  // namespace

void print_tree(std::ostream& os, const topology& t, const address_map& map) {
  tree_printer p(os, t, map);
  for (const auto& s : t.sockets) p.socket(s);
}

void print_topo_matrix(std::ostream& os, const topology& t) {
  std::vector<const device_params*> devs;
  for (const auto* kind : device::kinds())  // by kind, in their registered order
    for (const auto& d : t.devices)
      if (&d.kind() == kind) devs.push_back(&d);
  const fabric_graph g(t);
  const address_map map = enumerate(t);
  for (const auto* d : devs) os << '\t' << upper(d->name);
  os << "\tCPU Affinity\tNUMA Affinity\n";
  for (const auto* row : devs) {
    os << upper(row->name);
    for (const auto* col : devs) {
      path_type p = g.classify(row->name, col->name);
      os << '\t' << (p == path_type::X ? " X " : to_string(p));
    }
    const std::string& socket = map.socket_of.at(row->name);
    os << '\t' << socket << '\t' << t.socket_index(socket) << '\n';
  }
  os << "\nLegend:\n\n"
        "  X    = Self\n"
        "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes "
        "(e.g., QPI/UPI)\n"
        "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host "
        "Bridges within a NUMA node\n"
        "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
        "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host "
        "Bridge)\n"
        "  PIX  = Connection traversing at most a single PCIe bridge\n"
        "  NV#  = Connection traversing a bonded set of # NVLinks\n"
        "\nGPUDirect RDMA class (GPUDirect RDMA guide 13.3, 5.4 Supported Systems):\n\n"
        "  1 = PIX, PXB  : "
     << topology_class_name(1) << " (best performance)\n"
     << "  2 = PHB, NODE : " << topology_class_name(2)
     << " (works; P2P reads may be severely limited)\n"
     << "  3 = SYS       : " << topology_class_name(3)
     << " (extremely limited or not working reliably)\n";
}

void write_dot(std::ostream& os, const topology& t) {
  struct vertex {
    std::string name, label, shape, style;
  };
  struct edge {
    std::string label, style;
  };
  using graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, vertex, edge>;
  graph g;
  std::map<std::string, graph::vertex_descriptor> index;
  auto add = [&](const std::string& name, std::string label, const char* shape,
                 const char* style = "") {
    index[name] = boost::add_vertex(vertex{name, std::move(label), shape, style}, g);
  };
  auto port_node = [&](const link_params& l) {
    const socket_params* s = t.find_socket(l.up);
    return s && s->host_bridges > 1 ? fmt::format("{}.hb{}", l.up, l.host_bridge) : l.up;
  };
  for (const auto& s : t.sockets) {
    add(s.name,
        fmt::format("{}\\n{}, {}", s.name, s.platform_name.empty() ? "socket" : s.platform_name,
                    format_size(s.memory_bytes)),
        "box3d");
    if (s.host_bridges > 1)
      for (int h = 0; h < s.host_bridges; ++h) {
        std::string hb = fmt::format("{}.hb{}", s.name, h);
        add(hb, fmt::format("host bridge {}", h), "box", "rounded");
        boost::add_edge(index[s.name], index[hb], edge{"", "dashed"}, g);
      }
  }
  for (const auto& s : t.switches)
    add(s.name, s.name + "\\nswitch" + (s.model.empty() ? "" : " " + s.model), "box");
  for (const auto& d : t.devices) {
    std::string label = d.name + "\\n" + d.kind().title() + (d.model.empty() ? "" : " " + d.model);
    for (const auto& shown : d.settings->summary())
      for (const auto& b : std::as_const(*d.settings).parameters())
        if (b.decl->key == shown.key)
          label += fmt::format(", {} {}", shown.label, config::format_value(*b.decl, b.get()));
    const auto look = d.kind().look();
    add(d.name, label, look.shape.c_str(), look.style.c_str());
  }
  for (const auto& l : t.links)
    boost::add_edge(index.at(port_node(l)), index.at(l.down),
                    edge{fmt::format("Gen{} x{}", l.gen, l.width), "solid"}, g);
  for (const auto& ic : t.interconnects) {
    boost::add_edge(index.at(ic.a), index.at(ic.b),
                    edge{fmt::format("{} {:g} GB/s", ic.name, ic.bandwidth_gbs), "bold"}, g);
  }
  boost::dynamic_properties dp;
  dp.property("node_id", boost::get(&vertex::name, g));
  dp.property("label", boost::get(&vertex::label, g));
  dp.property("shape", boost::get(&vertex::shape, g));
  dp.property("style", boost::get(&vertex::style, g));
  dp.property("label", boost::get(&edge::label, g));
  dp.property("style", boost::get(&edge::style, g));
  boost::write_graphviz_dp(os, g, dp, "node_id");
}

}  // namespace p2psim::topo
