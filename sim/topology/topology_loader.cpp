#include "sim/topology/topology_loader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>

#include "models/device/registry.h"
#include "sim/config/param_reader.h"
#include "sim/config/units.h"
#include "sim/topology/device_presets.h"
#include "sim/topology/parameters.h"
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
  config::read_params(r, socket_settings(), s);
  if (r.has("platform")) {
    s.platform = presets.get(r).spec;
    s.platform_name = presets.get(r).name;
  }
  // A socket overrides its preset's sections; `memory` is the socket's size, so the preset's
  // `memory` section is `memory_controller` here.
  const auto& platform = root_complex::platform_spec_params();
  for (auto [key, section] :
       {std::pair{"root_complex", "root_complex"}, std::pair{"memory_controller", "memory"},
        std::pair{"interconnect", "interconnect"}})
    if (auto c = r.optional_child(key)) {
      config::read_params(*c, platform, s.platform, section);
      c->done();
    }
  if (auto io = r.optional_child("iommu")) {
    config::read_params(*io, iommu::iommu_spec_params(), s.iommu);
    io->done();
  }
  r.done();
  record_locs(r, s.key_locs);
  return s;
}

std::string platform_label(const socket_params& s) {
  return s.platform_name.empty() ? "the built-in defaults" : "'" + s.platform_name + "'";
}

// Real multi-socket machines pair identical CPUs: sockets of different presets are most
// often a --set meant for every socket, and the run would look plausible (a Sandy Bridge-EP
// socket beside a Skylake-SP one crossed UPI faster than two Skylake-SP sockets). Refused unless
// the topology says `mixed_platforms: true`; then every socket crosses the interconnect by the
// strictest of their P2P policies, and the run warns of it.
void check_platform_mix(topology& t, const config::source_loc& allowed_at) {
  if (t.sockets.empty()) return;
  const socket_params& first = t.sockets.front();
  auto differs = [&](const socket_params& s) { return s.platform_name != first.platform_name; };
  auto other = std::find_if(t.sockets.begin(), t.sockets.end(), differs);
  if (other == t.sockets.end()) return;
  if (!t.mixed_platforms) {
    // Name the socket a --set changed, if one did: that is where the mix came from.
    const bool first_set = loc_of(first, "platform").file.starts_with("--set ");
    const socket_params& odd = first_set ? first : *other;
    const socket_params& rest = first_set ? *other : first;
    throw config::error(
        loc_of(odd, "platform"), "platform",
        fmt::format("socket {} uses platform {} and socket {} {}: a real machine's sockets have "
                    "the same CPU; set every socket's platform, or write `mixed_platforms: "
                    "true` at the topology's top level to mix them on purpose",
                    odd.name, platform_label(odd), rest.name, platform_label(rest)));
  }
  root_complex::p2p_policy write = first.platform.interconnect_p2p_write;
  root_complex::p2p_policy read = first.platform.interconnect_p2p_read;
  std::vector<std::string> names;
  for (const auto& s : t.sockets) {
    write = root_complex::stricter(write, s.platform.interconnect_p2p_write);
    read = root_complex::stricter(read, s.platform.interconnect_p2p_read);
    names.push_back(s.name + " " + platform_label(s));
  }
  for (auto& s : t.sockets) {
    s.platform.interconnect_p2p_write = write;
    s.platform.interconnect_p2p_read = read;
  }
  auto describe = [](const root_complex::p2p_policy& p, bool reads) {
    if (!p.routed) return std::string("not routed");
    std::string d = p.bandwidth_gbs ? fmt::format("routed, at most {:g} GB/s", p.bandwidth_gbs)
                                    : std::string("routed, no cap");
    if (reads && p.outstanding) d += fmt::format(", {} at once", p.outstanding);
    return d;
  };
  t.warnings.push_back(fmt::format(
      "{}: mixed_platforms: sockets of different platforms ({}): P2P across the interconnect "
      "takes the stricter policy of them all on every socket: writes {}, reads {}",
      allowed_at.str(), fmt::join(names, ", "), describe(write, false), describe(read, true)));
}

// An interconnect's timing defaults to its first socket's platform; between sockets of
// different platforms, to the slower of the two.
interconnect_params read_interconnect(const node_reader& r,
                                      const std::vector<socket_params>& sockets) {
  interconnect_params ic;
  ic.loc = r.loc();
  ic.name = read_name(r);
  std::vector<std::string> between = r.string_list("between");
  if (between.size() != 2)
    r.fail("between", fmt::format("expected two socket names, got {}", between.size()));
  ic.a = between[0];
  ic.b = between[1];
  const socket_params *a = nullptr, *b = nullptr;
  for (const auto& s : sockets) {
    if (s.name == ic.a) a = &s;
    if (s.name == ic.b) b = &s;
  }
  if (a) static_cast<link::interconnect_spec&>(ic) = a->platform.interconnect;
  if (a && b && a->platform_name != b->platform_name)
    static_cast<link::interconnect_spec&>(ic) =
        link::slower(a->platform.interconnect, b->platform.interconnect);
  config::read_params(r, link::interconnect_spec_params(), ic);
  r.done();
  record_locs(r, ic.key_locs);
  return ic;
}

// Marks a preset's description keys read (load_device_preset read them), so that only its
// settings are left for the reader of its kind.
void skip_preset_description(const node_reader& p) {
  for (const char* meta : {"name", "type", "description", "source", "pci_ids"})
    if (p.has(meta)) p.raw(meta);
}

// The preset `r`'s `model` names; an unknown name is an error at the key, listing the presets
// (`what`: "device" or "switch").
const device_preset& preset_named(const node_reader& r, device_preset_finder& presets,
                                  const std::string& name, const char* what) {
  const device_preset* preset = presets.find(name);
  if (!preset)
    r.fail("model", fmt::format("unknown {} preset '{}' (available: {})", what, name,
                                fmt::join(presets.names(), ", ")));
  return *preset;
}

switch_params read_switch(const node_reader& r, device_preset_finder& presets) {
  switch_params s;
  s.loc = r.loc();
  s.name = read_name(r);
  if (r.has("model")) {  // the preset's values first, the switch's own over them
    s.model = r.str("model");
    const device_preset* preset = &preset_named(r, presets, s.model, "switch");
    if (preset->type != "switch")
      r.fail("model", fmt::format("model {} is a {}, not a switch", s.model, preset->type));
    const node_reader p = preset->settings();
    skip_preset_description(p);
    config::read_params(p, pcie_switch::switch_spec_params(), s);
    p.done();
  }
  config::read_params(r, pcie_switch::switch_spec_params(), s);
  r.done();
  record_locs(r, s.key_locs);
  return s;
}

device_params read_device(const node_reader& r, const pcie_defaults& pcie,
                          device_preset_finder& presets) {
  device_params d;
  d.loc = r.loc();
  d.name = read_name(r);
  const device_preset* preset = nullptr;
  if (r.has("model")) {
    d.model = r.str("model");
    preset = &preset_named(r, presets, d.model, "device");
  }
  if (preset && preset->type == "switch")
    r.fail("model",
           fmt::format("model {} is a switch, not a device (name it under `switches`)", d.model));
  // `type` defaults to the model's, else to the GPU, the device most topologies are about.
  const std::string kind = r.choice("type", device::kind_names(), preset ? preset->type : "gpu");
  if (preset && kind != preset->type)
    r.fail("type", fmt::format("model {} is a {}, not a {}", d.model, preset->type, kind));
  d.settings = device::config_value(device::find_kind(kind)->defaults());
  d.control = pcie;
  if (preset) {  // the preset's values first, the device's own over them
    const node_reader p = preset->settings();
    skip_preset_description(p);
    config::read_params(p, device_settings(), d);
    config::read_params(p, d.settings->parameters());
    p.done();
  }
  config::read_params(r, device_settings(), d);
  config::read_params(r, d.settings->parameters());
  r.done();
  record_locs(r, d.key_locs);
  return d;
}

link_params read_link(const node_reader& r) {
  link_params l;
  l.loc = r.loc();
  l.up = r.str("up");
  l.down = r.str("down");
  config::read_params(r, link_settings(), l);
  config::read_params(r, link::link_spec_params(), l);
  r.done();
  record_locs(r, l.key_locs);
  return l;
}

pcie_defaults read_pcie(const node_reader& r) {
  pcie_defaults p;
  p.loc = r.loc();
  config::read_params(r, pcie::device_control_params(), p);
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
  device_preset_finder device_presets(device_preset_dirs(dirs));

  topology t;
  t.file = doc.file();
  t.loc = root.loc();
  t.name = root.str("name", file.stem().string());
  t.description = root.str("description", "");
  if (auto p = root.optional_child("pcie")) t.pcie = read_pcie(*p);
  t.mixed_platforms = root.boolean("mixed_platforms", false);
  for (const auto& r : root.optional_list("sockets")) t.sockets.push_back(read_socket(r, presets));
  check_platform_mix(t, root.loc("mixed_platforms"));
  for (const auto& r : root.optional_list("interconnects"))
    t.interconnects.push_back(read_interconnect(r, t.sockets));
  for (const auto& r : root.optional_list("switches"))
    t.switches.push_back(read_switch(r, device_presets));
  for (const auto& r : root.optional_list("devices"))
    t.devices.push_back(read_device(r, t.pcie, device_presets));
  for (const auto& r : root.optional_list("links")) t.links.push_back(read_link(r));
  root.done();
  record_locs(root, t.key_locs);
  check_topology(t);
  return t;
}

}  // namespace p2psim::topo
