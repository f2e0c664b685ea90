#include "sim/topology/topology_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "sim/config/units.h"
#include "sim/topology/platform_reader.h"
#include "sim/topology/topology_graph.h"

namespace p2psim::topo {
namespace {

namespace fs = std::filesystem;
using config::node_reader;

// Called after done(), so asking for locations cannot widen the "expected one of" list.
void record_locs(const node_reader& r, key_locations& locs) {
  for (const auto& key : r.keys()) locs[key] = r.loc(key);
}

bool is_plain_name(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

// Node names appear in --set paths and reports: keep them free of '.', spaces and the like.
std::string read_name(const node_reader& r) {
  std::string name = r.str("name");
  if (!is_plain_name(name))
    r.fail("name", fmt::format("'{}' is not a valid name: use letters, digits, '_' and '-'", name));
  return name;
}

// A PCIe size setting (mps, mrrs, rcb); check_topology checks its value, this only keeps a
// huge one from being truncated into a valid-looking one.
uint32_t pcie_size(const node_reader& r, const std::string& key, uint32_t def) {
  uint64_t v = r.size(key, def);
  if (v > 4096) r.fail(key, fmt::format("expected at most 4KiB, got {}", config::format_size(v)));
  return uint32_t(v);
}

// Platform presets, looked up by name and read once per topology.
class preset_finder {
 public:
  explicit preset_finder(std::vector<std::string> dirs) : m_dirs(std::move(dirs)) {}

  const platform_params& get(const node_reader& socket) {
    std::string name = socket.str("platform");
    if (auto it = m_cache.find(name); it != m_cache.end()) return it->second;
    if (is_plain_name(name))
      for (const auto& dir : m_dirs) {
        fs::path file = fs::path(dir) / (name + ".yaml");
        std::error_code ec;
        if (fs::is_regular_file(file, ec))
          return m_cache.emplace(name, load_platform(file.string())).first->second;
      }
    std::vector<std::string> have = available_platforms(m_dirs);
    std::string list;
    for (const auto& h : have) list += (list.empty() ? "" : ", ") + h;
    socket.fail("platform", fmt::format("unknown platform '{}' (available: {})", name,
                                        list.empty() ? "none found" : list));
  }

 private:
  std::vector<std::string> m_dirs;
  std::map<std::string, platform_params> m_cache;
};

socket_params read_socket(const node_reader& r, preset_finder& presets) {
  socket_params s;
  s.loc = r.loc();
  s.name = read_name(r);
  s.memory_bytes = r.size("memory", s.memory_bytes);
  s.host_bridges = int(r.integer("host_bridges", 1, 16, s.host_bridges));
  if (r.has("platform")) {
    s.platform = presets.get(r);
    s.platform_name = s.platform.name;
  }
  if (auto rc = r.optional_child("root_complex")) detail::read_root_complex(*rc, s.platform);
  if (auto mc = r.optional_child("memory_controller")) detail::read_memory(*mc, s.platform);
  if (auto qpi = r.optional_child("interconnect")) detail::read_interconnect(*qpi, s.platform);
  if (auto io = r.optional_child("iommu")) s.iommu = detail::read_iommu(*io);
  r.done();
  record_locs(r, s.key_locs);
  return s;
}

interconnect_params read_interconnect(const node_reader& r) {
  interconnect_params ic;
  ic.loc = r.loc();
  ic.name = read_name(r);
  std::vector<std::string> between = r.string_list("between");
  if (between.size() != 2)
    r.fail("between", fmt::format("expected two socket names, got {}", between.size()));
  ic.a = between[0];
  ic.b = between[1];
  if (r.has("bandwidth")) {
    ic.bandwidth_gbs = r.bandwidth_gbs("bandwidth");
    // Unlike the caps where 0 means none, this is the link's speed: every byte takes 1/bandwidth.
    if (*ic.bandwidth_gbs == 0) r.fail("bandwidth", "an interconnect's bandwidth must be above 0");
  }
  if (r.has("latency")) ic.latency_ns = r.time_ns("latency");
  r.done();
  record_locs(r, ic.key_locs);
  return ic;
}

switch_params read_switch(const node_reader& r) {
  switch_params s;
  s.loc = r.loc();
  s.name = read_name(r);
  s.latency_ns = r.time_ns("latency", s.latency_ns);
  s.cut_through = r.choice("forwarding", {"cut_through", "store_and_forward"},
                           s.cut_through ? "cut_through" : "store_and_forward") == "cut_through";
  s.acs_redirect = r.boolean("acs_redirect", s.acs_redirect);
  s.ports = int(r.integer("ports", 0, 32, s.ports));
  r.done();
  record_locs(r, s.key_locs);
  return s;
}

device_params read_device(const node_reader& r) {
  device_params d;
  d.loc = r.loc();
  d.name = read_name(r);
  d.type = r.choice("type", {"gpu", "dma_engine"}, "gpu") == "gpu" ? device_type::gpu
                                                                   : device_type::dma_engine;
  // PCIe settings: 0 = the topology's `pcie` value; check_topology validates them.
  d.mps = pcie_size(r, "mps", 0);
  d.mrrs = pcie_size(r, "mrrs", 0);
  d.rcb = pcie_size(r, "rcb", 0);
  d.tags = uint32_t(r.integer("tags", 1, 1024, 0));
  d.bar0_bytes = r.size("bar0", d.bar0_bytes);
  d.bar0_address = r.optional_address("bar0_address");
  if (d.type == device_type::gpu) {
    d.bar1_bytes = r.size("bar1", d.bar1_bytes);
    d.bar1_reserved_bytes = r.size("bar1_reserved", d.bar1_reserved_bytes);
    d.bar1_address = r.optional_address("bar1_address");
    d.vram_bytes = r.size("vram", d.vram_bytes);
    d.vram_latency_ns = r.time_ns("vram_latency", d.vram_latency_ns);
    d.vram_bandwidth_gbs = r.bandwidth_gbs("vram_bandwidth", d.vram_bandwidth_gbs);
    const std::string o = r.choice("rdma_writes_ordering", {"none", "owner", "all_devices"},
                                   to_string(d.rdma_ordering));
    d.rdma_ordering = o == "none"          ? rdma_writes_ordering::none
                      : o == "all_devices" ? rdma_writes_ordering::all_devices
                                           : rdma_writes_ordering::owner;
  } else {
    // A DMA engine has no BAR1 aperture and no VRAM; zero them so nothing allocates them.
    d.bar1_bytes = d.bar1_reserved_bytes = d.vram_bytes = 0;
    d.bar2_bytes = r.size("bar2", d.bar2_bytes);
    d.bar2_address = r.optional_address("bar2_address");
    d.local_memory_bytes = r.size("local_memory", d.local_memory_bytes);
    d.descriptor_latency_ns = r.time_ns("descriptor_latency", d.descriptor_latency_ns);
  }
  r.done();
  record_locs(r, d.key_locs);
  return d;
}

credit_params read_credits(const node_reader& r) {
  // Header credits hold 127 and data credits 2047 unscaled; Scaled Flow Control multiplies
  // by up to 16.
  credit_params c;
  c.ph = uint32_t(r.integer("ph", 0, 127 * 16, c.ph));
  c.pd = uint32_t(r.integer("pd", 0, 2047 * 16, c.pd));
  c.nph = uint32_t(r.integer("nph", 0, 127 * 16, c.nph));
  c.npd = uint32_t(r.integer("npd", 0, 2047 * 16, c.npd));
  c.cplh = uint32_t(r.integer("cplh", 0, 127 * 16, c.cplh));
  c.cpld = uint32_t(r.integer("cpld", 0, 2047 * 16, c.cpld));
  r.done();
  return c;
}

link_params read_link(const node_reader& r) {
  link_params l;
  l.loc = r.loc();
  l.up = r.str("up");
  l.down = r.str("down");
  l.host_bridge = int(r.integer("host_bridge", 0, 15, l.host_bridge));
  l.gen = int(r.integer("gen", 1, 5, l.gen));
  l.width =
      std::stoi(r.choice("width", {"1", "2", "4", "8", "12", "16", "32"}, std::to_string(l.width)));
  l.latency_ns = r.time_ns("latency", l.latency_ns);
  l.ecrc = r.boolean("ecrc", l.ecrc);
  l.ack_limit = uint32_t(r.integer("ack_limit", 0, 1 << 20, l.ack_limit));
  l.fc_limit = uint32_t(r.integer("fc_limit", 0, 1 << 20, l.fc_limit));
  if (auto c = r.optional_child("credits")) l.credits = read_credits(*c);
  r.done();
  record_locs(r, l.key_locs);
  return l;
}

pcie_defaults read_pcie(const node_reader& r) {
  pcie_defaults p;
  p.loc = r.loc();
  p.mps = pcie_size(r, "mps", p.mps);
  p.mrrs = pcie_size(r, "mrrs", p.mrrs);
  p.rcb = pcie_size(r, "rcb", p.rcb);
  p.tags = uint32_t(r.integer("tags", 1, 1024, p.tags));
  r.done();
  record_locs(r, p.key_locs);
  return p;
}

}  // namespace

bool is_topology_override(const config::override_spec& spec) {
  const std::string first = config::split_path(spec.path).front();
  return first == "link" || first == "switch" || first == "device" || first == "socket" ||
         first == "interconnect" || first == "pcie";
}

const config::override_rules& topology_override_rules() {
  static const config::override_rules rules{{{"link", "links"},
                                             {"switch", "switches"},
                                             {"device", "devices"},
                                             {"socket", "sockets"},
                                             {"interconnect", "interconnects"}},
                                            {{"links", "down"},
                                             {"switches", "name"},
                                             {"devices", "name"},
                                             {"sockets", "name"},
                                             {"interconnects", "name"}}};
  return rules;
}

topology load_topology(const std::string& path, const load_options& options) {
  config::document doc = config::document::load(path);
  return load_topology(doc, options);
}

topology load_topology(config::document& doc, const load_options& options) {
  for (const auto& o : options.overrides) {
    if (!is_topology_override(o))
      throw config::error(o.origin(), "",
                          "not a topology setting (those start with link., switch., device., "
                          "socket., interconnect. or pcie.)");
    config::apply_override(doc, o, topology_override_rules());
  }
  const node_reader root = doc.root();
  fs::path file(doc.file());
  std::vector<std::string> dirs{(file.parent_path() / "platforms").string()};
  dirs.insert(dirs.end(), options.platform_dirs.begin(), options.platform_dirs.end());
  preset_finder presets(dirs);

  topology t;
  t.file = doc.file();
  t.loc = root.loc();
  t.name = root.str("name", file.stem().string());
  t.description = root.str("description", "");
  if (auto p = root.optional_child("pcie")) t.pcie = read_pcie(*p);
  for (const auto& r : root.optional_list("sockets")) t.sockets.push_back(read_socket(r, presets));
  for (const auto& r : root.optional_list("interconnects"))
    t.interconnects.push_back(read_interconnect(r));
  for (const auto& r : root.optional_list("switches")) t.switches.push_back(read_switch(r));
  for (const auto& r : root.optional_list("devices")) t.devices.push_back(read_device(r));
  for (const auto& r : root.optional_list("links")) t.links.push_back(read_link(r));
  root.done();
  record_locs(root, t.key_locs);
  check_topology(t);
  return t;
}

}  // namespace p2psim::topo
