// `nvidia-smi topo -m` -> topology YAML: the matrix (smi_matrix.cpp reads it), building the
// smallest PCIe tree that gives each pair its relation (smi_import.h), writing it, and checking it
// by loading it and classifying every pair again.
#include "sim/topology/smi_import.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <numeric>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/config/error.h"
#include "sim/config/reader.h"
#include "sim/topology/nccl_import_detail.h"
#include "sim/topology/smi_matrix.h"
#include "sim/topology/topology_graph.h"
#include "sim/topology/topology_loader.h"

namespace p2psim::topo {

namespace fs = std::filesystem;
using detail::one_line;

std::optional<int> smi_closeness(std::string_view cell) {
  static const std::map<std::string_view, int> named{
      {"PIX", 1}, {"PXB", 2}, {"PHB", 3}, {"NODE", 4}, {"SYS", 5}};
  if (auto it = named.find(cell); it != named.end()) return it->second;
  if (cell.size() > 2 && cell.substr(0, 2) == "NV" &&
      std::all_of(cell.begin() + 2, cell.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return 0;
  return std::nullopt;
}

namespace {

constexpr const char* default_platform = "skylake_sp";

using device = detail::smi_device;
using detail::shown;

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Sets joined by a relation, as a union-find.
struct partition {
  explicit partition(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  size_t find(size_t i) { return parent[i] == i ? i : parent[i] = find(parent[i]); }
  void join(size_t a, size_t b) { parent[find(b)] = find(a); }
  std::vector<size_t> parent;
};

// The members of each set, sets in the order of their first member.
std::vector<std::vector<size_t>> groups(partition& p, const std::vector<size_t>& members) {
  std::vector<std::vector<size_t>> out;
  std::map<size_t, size_t> index;
  for (size_t m : members) {
    auto [it, fresh] = index.emplace(p.find(m), out.size());
    if (fresh) out.emplace_back();
    out[it->second].push_back(m);
  }
  return out;
}

class importer {
 public:
  importer(std::string_view text, std::string file, const smi_import_options& options)
      : m_text(text), m_file(std::move(file)), m_options(options) {}

  smi_import_result run() {
    read();
    choose_platform();
    build();
    std::string yaml = write();
    check(yaml);
    return {std::move(yaml), std::move(m_warnings)};
  }

 private:
  [[noreturn]] void fail(config::source_loc at, const std::string& key, const std::string& what) {
    throw config::error(std::move(at), key, what);
  }
  config::source_loc at(int line, int column) const { return {m_file, line, column}; }
  void warn(const config::source_loc& where, const std::string& what) {
    m_warnings.push_back(fmt::format("{}: warning: {}", where.str(), what));
  }

  // ---- reading ----------------------------------------------------------------------------

  void read() {
    detail::smi_matrix m = detail::read_smi_matrix(m_text, m_file);
    m_devices = std::move(m.devices);
    m_cells = std::move(m.cells);
    m_header_line = m.header_line;
  }

  // ---- the tree ---------------------------------------------------------------------------

  void choose_platform() {
    m_platform = m_options.platform;
    if (m_platform.empty()) {
      m_platform = default_platform;
      warn(at(m_header_line, 1),
           fmt::format("nvidia-smi topo -m does not name the CPU: sockets get the {} preset "
                       "(--platform chooses another)",
                       m_platform));
      m_platform_note =
          fmt::format("ASSUMED {}: nvidia-smi topo -m does not name the CPU", m_platform);
    } else {
      m_platform_note = fmt::format("{}: given with --platform", m_platform);
    }
    for (const auto& dir : m_options.platform_dirs) {
      fs::path p = fs::path(dir) / (m_platform + ".yaml");
      std::error_code ec;
      if (fs::is_regular_file(p, ec)) {
        m_gen = load_platform(p.string()).spec.max_gen;
        return;
      }
    }
    fail({"--platform", 0, 0}, "",
         fmt::format("no platform preset '{}'; there are: {}", shown(m_platform),
                     fmt::join(available_platforms(m_options.platform_dirs), ", ")));
  }

  struct switch_node {
    std::string up;  // a socket or switch name
    int host_bridge = 0;
    std::string comment;
  };
  struct link_row {
    std::string up, down;
    int host_bridge = 0;
  };

  int closeness(size_t a, size_t b) const { return *smi_closeness(m_cells[a][b]); }

  void build() {
    const size_t n = m_devices.size();
    // Named after their column (GPU0 -> gpu0, mlx5_0 as older drivers label NICs); a label
    // that is no name gets the next gpuN or nicN.
    int gpus = 0, nics = 0;
    static const std::regex name_like("[A-Za-z][A-Za-z0-9_]*");
    for (auto& d : m_devices) {
      if (std::regex_match(d.label, name_like))
        d.name = lower(d.label);
      else
        d.name = fmt::format("{}{}", d.gpu ? "gpu" : "nic", d.gpu ? gpus : nics);
      (d.gpu ? gpus : nics)++;
    }
    for (size_t a = 0; a < n; ++a)
      for (size_t b = 0; b < a; ++b)
        if (m_devices[a].name == m_devices[b].name)
          fail(m_devices[a].loc, m_devices[a].label,
               fmt::format("would be {}, as {} is", m_devices[a].name, m_devices[b].label));

    // Sockets: joined by anything but SYS, then sets the matrix says nothing about (every pair
    // NVLink) placed by NUMA node.
    partition socket(n), bridge(n), port(n), leaf(n);
    for (size_t a = 0; a < n; ++a)
      for (size_t b = 0; b < a; ++b) {
        const int c = closeness(a, b);
        if (c == 0) {
          ++m_nvlink_pairs;
          if (m_nvlink_example.empty())
            m_nvlink_example =
                fmt::format("{}-{} {}", m_devices[b].label, m_devices[a].label, m_cells[a][b]);
          continue;
        }
        if (c <= 4) socket.join(b, a);
        if (c <= 3) bridge.join(b, a);
        if (c <= 2) port.join(b, a);
        if (c == 1) leaf.join(b, a);
      }
    std::vector<size_t> all(n);
    std::iota(all.begin(), all.end(), 0);
    merge_unrelated(socket, bridge, groups(socket, all));

    for (const auto& members : groups(socket, all)) {
      const std::string name = fmt::format("cpu{}", m_sockets.size());
      std::vector<std::string> numa;
      for (size_t d : members)
        if (!m_devices[d].numa.empty() &&
            std::find(numa.begin(), numa.end(), m_devices[d].numa) == numa.end())
          numa.push_back(m_devices[d].numa);
      std::string comment;
      if (!numa.empty()) comment = fmt::format("NUMA node {}", fmt::join(numa, ", "));
      for (size_t d : members)
        if (!m_devices[d].cpus.empty()) {
          comment += (comment.empty() ? "" : ", ") + fmt::format("CPUs {}", m_devices[d].cpus);
          break;
        }
      const auto bridges = groups(bridge, members);
      m_sockets.push_back({name, int(bridges.size()), comment});
      for (size_t h = 0; h < bridges.size(); ++h)
        for (const auto& ports : groups(port, bridges[h])) build_port(name, int(h), ports, leaf);
    }
  }

  // Sets with no known relation to any device of another (each pair NVLink) join the first
  // set they share a NUMA node with, or the first set when the matrix gives no NUMA node: on
  // its first host bridge, each on a root port of its own (PHB).
  void merge_unrelated(partition& socket, partition& bridge,
                       const std::vector<std::vector<size_t>>& sets) {
    auto numa_of = [&](const std::vector<size_t>& s) {
      for (size_t d : s)
        if (!m_devices[d].numa.empty()) return m_devices[d].numa;
      return std::string();
    };
    for (size_t j = 1; j < sets.size(); ++j) {
      for (size_t i = 0; i < j; ++i) {
        bool related = false;
        for (size_t a : sets[i])
          for (size_t b : sets[j]) related = related || closeness(a, b) != 0;
        const std::string ni = numa_of(sets[i]), nj = numa_of(sets[j]);
        if (related || (!ni.empty() && !nj.empty() && ni != nj)) continue;
        socket.join(sets[i][0], sets[j][0]);
        bridge.join(sets[i][0], sets[j][0]);
        std::vector<std::string> labels;
        for (size_t d : sets[j]) labels.push_back(m_devices[d].label);
        const std::string why =
            nj.empty() ? "the matrix gives no NUMA node"
                       : fmt::format("NUMA node {}, as {}", nj, m_devices[sets[i][0]].label);
        m_placed.push_back(
            fmt::format("{}: PCIe path hidden behind NVLink; placed on a root "
                        "port of {}'s host bridge ({})",
                        fmt::join(labels, ", "), m_devices[sets[i][0]].label, why));
        break;
      }
    }
  }

  // The devices behind one root port: alone, one switch (all PIX), or a switch above one
  // switch per PIX set (PXB between the sets; nvidia-smi shows PXB for any depth).
  void build_port(const std::string& socket, int host_bridge, const std::vector<size_t>& members,
                  partition& leaf) {
    if (members.size() == 1) {
      m_links.push_back({socket, m_devices[members[0]].name, host_bridge});
      return;
    }
    const auto sets = groups(leaf, members);
    auto labels = [&](const std::vector<size_t>& s) {
      std::vector<std::string> out;
      for (size_t d : s) out.push_back(m_devices[d].label);
      return fmt::format("{}", fmt::join(out, ", "));
    };
    auto add_switch = [&](const std::string& up, int hb, std::string comment) {
      std::string name = fmt::format("sw{}", m_switches.size());
      m_switches.push_back({up, hb, std::move(comment)});
      m_links.push_back({up, name, hb});
      return name;
    };
    if (sets.size() == 1) {
      const std::string sw = add_switch(socket, host_bridge, "PIX: " + labels(members));
      for (size_t d : members) m_links.push_back({sw, m_devices[d].name, 0});
      return;
    }
    const std::string top = add_switch(socket, host_bridge, "PXB: " + labels(members));
    bool single_on_top = false;  // one device alone in its PIX set may hang off the top switch
    for (const auto& s : sets) {
      if (s.size() == 1 && !single_on_top) {
        single_on_top = true;
        m_links.push_back({top, m_devices[s[0]].name, 0});
        continue;
      }
      const std::string sw = add_switch(top, 0, "PIX: " + labels(s));
      for (size_t d : s) m_links.push_back({sw, m_devices[d].name, 0});
    }
  }

  // ---- writing and checking -----------------------------------------------------------------

  std::string write() const {
    using detail::write_block;
    std::ostringstream os;
    const std::string base = fs::path(m_file).filename().string();
    os << "# Imported from `nvidia-smi topo -m` output " << one_line(m_file)
       << " by `p2psim topo --import-nvidia-smi`.\n"
          "# The matrix says how far apart devices are, not what lies between them: this is the\n"
          "# smallest PCIe tree that gives every pair its relation (one switch level where it "
          "says\n"
          "# PXB, however deep the real tree is).\n"
       << "# Sockets: " << m_platform_note << ".\n"
       << "# Links: Gen" << m_gen << " x16, the preset's fastest (the matrix has no speeds or "
       << "widths).\n"
          "# Not in the matrix, so p2psim's defaults: host memory, BAR sizes, VRAM, switch "
          "latency,\n"
          "# MPS/MRRS/tags, link latency and credits.\n";
    if (m_nvlink_pairs)
      os << "# NVLink: " << m_nvlink_pairs << " pair(s), e.g. " << m_nvlink_example
         << ", not modelled (their traffic takes PCIe).\n";
    for (const auto& p : m_placed) os << "# " << p << ".\n";
    os << "description: " << detail::yaml_quoted("Imported from nvidia-smi topo -m " + base)
       << "\n";
    std::vector<std::pair<std::string, std::string>> rows;
    os << "sockets:\n";
    for (const auto& s : m_sockets)
      rows.emplace_back(s.host_bridges > 1
                            ? fmt::format("  - {{name: {}, platform: {}, host_bridges: {}}}",
                                          s.name, m_platform, s.host_bridges)
                            : fmt::format("  - {{name: {}, platform: {}}}", s.name, m_platform),
                        s.comment);
    write_block(os, rows);
    if (m_sockets.size() > 1) {
      rows.clear();
      os << "interconnects:\n";
      for (size_t a = 0; a < m_sockets.size(); ++a)
        for (size_t b = a + 1; b < m_sockets.size(); ++b)
          rows.emplace_back(fmt::format("  - {{name: {}{}, between: [{}, {}]}}",
                                        detail::interconnect_prefix(m_platform), rows.size(),
                                        m_sockets[a].name, m_sockets[b].name),
                            "");
      write_block(os, rows);
    }
    if (!m_switches.empty()) {
      rows.clear();
      os << "switches:\n";
      for (size_t i = 0; i < m_switches.size(); ++i)
        rows.emplace_back(fmt::format("  - {{name: sw{}}}", i), m_switches[i].comment);
      write_block(os, rows);
    }
    rows.clear();
    os << "devices:\n";
    for (const auto& d : m_devices)
      rows.emplace_back(
          fmt::format("  - {{name: {}, type: {}}}", d.name, d.gpu ? "gpu" : "dma_engine"),
          d.nic_name.empty() ? d.label : fmt::format("{}: {}", d.label, d.nic_name));
    write_block(os, rows);
    rows.clear();
    os << "links:\n";
    for (const auto& l : m_links)
      rows.emplace_back(
          l.host_bridge
              ? fmt::format("  - {{up: {}, down: {}, gen: {}, width: 16, host_bridge: "
                            "{}}}",
                            l.up, l.down, m_gen, l.host_bridge)
              : fmt::format("  - {{up: {}, down: {}, gen: {}, width: 16}}", l.up, l.down, m_gen),
          "");
    write_block(os, rows);
    return os.str();
  }

  // Loads what was written and classifies every pair again: where the tree disagrees with a
  // cell, no tree gives the matrix (the relations contradict each other).
  void check(const std::string& yaml) {
    topology t;
    try {
      config::document doc = config::document::parse(yaml, m_file + " (imported)");
      t = load_topology(doc, load_options{m_options.platform_dirs, {}});
    } catch (const config::error& e) {
      fail(at(m_header_line, 1), "",
           fmt::format("p2psim cannot build the machine this matrix describes: {}", e.message));
    }
    const fabric_graph g(t);
    for (size_t a = 0; a < m_devices.size(); ++a)
      for (size_t b = 0; b < a; ++b) {
        if (closeness(a, b) == 0) continue;
        const std::string got = to_string(g.classify(m_devices[a].name, m_devices[b].name));
        if (got != m_cells[a][b])
          fail(m_devices[a].cells[b], m_devices[a].label + "/" + m_devices[b].label,
               fmt::format("{} here, but no PCIe tree gives every pair its relation: built from "
                           "the rest of the matrix, {} and {} are {}",
                           m_cells[a][b], m_devices[a].label, m_devices[b].label, got));
      }
    for (const auto& p : m_placed) warn(at(m_header_line, 1), p);
    if (m_nvlink_pairs)
      warn(at(m_header_line, 1),
           fmt::format("{} NVLink pair(s) (e.g. {}): NVLink is not modelled, their traffic takes "
                       "PCIe",
                       m_nvlink_pairs, m_nvlink_example));
    warn(at(m_header_line, 1),
         fmt::format("the matrix has no link speeds or widths: every link is Gen{} x16, the {} "
                     "preset's fastest",
                     m_gen, m_platform));
  }

  struct socket_row {
    std::string name;
    int host_bridges;
    std::string comment;
  };

  std::string_view m_text;
  std::string m_file;
  const smi_import_options& m_options;
  std::vector<device> m_devices;
  std::vector<std::vector<std::string>> m_cells;
  int m_header_line = 1;
  std::string m_platform, m_platform_note;
  int m_gen = 3;
  std::vector<socket_row> m_sockets;
  std::vector<switch_node> m_switches;
  std::vector<link_row> m_links;
  size_t m_nvlink_pairs = 0;
  std::string m_nvlink_example;
  std::vector<std::string> m_placed;  // devices placed by NUMA node, and why
  std::vector<std::string> m_warnings;
};

}  // namespace

smi_import_result import_smi_matrix(std::string_view text, const std::string& file,
                                    const smi_import_options& options) {
  return importer(text, file, options).run();
}

smi_import_result import_smi_file(const std::string& path, const smi_import_options& options) {
  return import_smi_matrix(detail::read_import_file(path, "nvidia-smi topo -m output"), path,
                           options);
}

}  // namespace p2psim::topo
