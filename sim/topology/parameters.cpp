#include "sim/topology/parameters.h"

#include <yaml-cpp/yaml.h>

#include <map>
#include <utility>

#include "models/device/registry.h"

namespace p2psim::topo {
namespace {

// Sets `key` ("p2p.write.routed") under `node`, creating the maps on the way.
void put(YAML::Node node, const std::string& key, const std::string& value) {
  const auto dot = key.find('.');
  if (dot == std::string::npos) {
    node[key] = value;
    return;
  }
  put(node[key.substr(0, dot)], key.substr(dot + 1), value);
}

void put_all(YAML::Node node, const std::vector<params::bound>& ps,
             const std::string& section = "") {
  for (const auto& [key, value] : config::values(ps)) {
    if (section.empty()) {
      put(node, key, value);
    } else if (key.compare(0, section.size() + 1, section + ".") == 0) {
      put(node, key.substr(section.size() + 1), value);
    }
  }
}

template <class Spec>
void put_all(YAML::Node node, const params::table<Spec>& t, const Spec& s,
             const std::string& section = "") {
  put_all(node, params::bind(t, s), section);
}

}  // namespace

const params::table<socket_params>& socket_settings() {
  static const params::table<socket_params> t{
      params::size("memory", &socket_params::memory_bytes,
                   "Host DRAM of this socket. All sockets' memories must fit below "
                   "`0x4000_0000_0000`."),
      params::integer("host_bridges", &socket_params::host_bridges,
                      "PCIe host bridges (root complexes) in this socket. Paths between two of "
                      "them are NODE.")
          .between(1, 16),
  };
  return t;
}

const params::table<link_params>& link_settings() {
  static const params::table<link_params> t{
      params::integer("host_bridge", &link_params::host_bridge,
                      "With a socket as `up`: which of its host bridges the root port is on "
                      "(0..host_bridges-1). Not allowed (non-zero) with a switch as `up`.")
          .between(0, 15),
  };
  return t;
}

const params::table<device_params>& device_settings() {
  static const params::table<device_params> t = params::join<device_params>({
      params::within("", &device_params::control, pcie::device_control_params()),
      params::within("", &device_params::dllps, pcie::dllp_rate_params()),
      {
          params::size("bar0", &device_params::bar0_bytes,
                       "Register BAR. Power of two, at least 4KiB."),
          params::address("bar0_address", &device_params::bar0_address,
                          "Explicit BAR0 base; must be aligned to `bar0`.")
              .default_text("allocated"),
      },
  });
  return t;
}

std::vector<parameter_table> parameter_tables() {
  auto device = config::rows(device_settings());
  for (auto& r : device)
    if (r.key == "mps" || r.key == "mrrs" || r.key == "rcb" || r.key == "tags")
      r.default_text = "the `pcie` value";
  auto interconnect = config::rows(link::interconnect_spec_params());
  for (auto& r : interconnect)
    r.default_text = "the first socket's platform `interconnect." + r.key +
                     "` (of mixed platforms, the slower socket's)";
  std::vector<parameter_table> tables{
      {"pcie", config::rows(pcie::device_control_params())},
      {"sockets", config::rows(socket_settings())},
      {"sockets.iommu", config::rows(iommu::iommu_spec_params())},
      {"interconnects", interconnect},
      {"switches", config::rows(pcie_switch::switch_spec_params())},
      {"devices", device},
      {"links", config::rows(link_settings())},
      {"links.spec", config::rows(link::link_spec_params())},
      {"platform", config::rows(root_complex::platform_spec_params())},
  };
  for (const auto* k : device::kinds())  // "devices.gpu": each kind's own settings
    tables.push_back(
        {"devices." + k->name(), config::rows(std::as_const(*k->defaults()).parameters())});
  return tables;
}

std::string regenerate_parameter_blocks(const std::string& doc) {
  std::map<std::string, std::string> tables;
  for (const auto& t : parameter_tables()) tables[t.name] = config::markdown_table(t.rows);
  return config::regenerate_blocks(doc, "parameters", tables);
}

std::string effective_yaml(const topology& t) {
  YAML::Node root;
  root["name"] = t.name;
  if (!t.description.empty()) root["description"] = t.description;
  if (t.mixed_platforms) root["mixed_platforms"] = true;
  put_all(root["pcie"], pcie::device_control_params(),
          static_cast<const pcie::device_control&>(t.pcie));
  for (const auto& s : t.sockets) {
    YAML::Node n;
    n["name"] = s.name;
    if (!s.platform_name.empty()) n["platform"] = s.platform_name;
    put_all(n, socket_settings(), s);
    // A socket takes its preset's sections; the preset's `memory` is its `memory_controller`.
    const auto& platform = root_complex::platform_spec_params();
    put_all(n["root_complex"], platform, s.platform, "root_complex");
    put_all(n["memory_controller"], platform, s.platform, "memory");
    put_all(n["interconnect"], platform, s.platform, "interconnect");
    put_all(n["iommu"], iommu::iommu_spec_params(), s.iommu);
    root["sockets"].push_back(n);
  }
  for (const auto& ic : t.interconnects) {
    YAML::Node n;
    n["name"] = ic.name;
    n["between"].push_back(ic.a);
    n["between"].push_back(ic.b);
    n["between"].SetStyle(YAML::EmitterStyle::Flow);
    put_all(n, link::interconnect_spec_params(), static_cast<const link::interconnect_spec&>(ic));
    root["interconnects"].push_back(n);
  }
  for (const auto& sw : t.switches) {
    YAML::Node n;
    n["name"] = sw.name;
    put_all(n, pcie_switch::switch_spec_params(), static_cast<const pcie_switch::switch_spec&>(sw));
    root["switches"].push_back(n);
  }
  for (const auto& d : t.devices) {
    YAML::Node n;
    n["name"] = d.name;
    n["type"] = d.kind().name();
    put_all(n, device_settings(), d);
    put_all(n, std::as_const(*d.settings).parameters());
    root["devices"].push_back(n);
  }
  for (const auto& l : t.links) {
    YAML::Node n;
    n["up"] = l.up;
    n["down"] = l.down;
    if (t.find_socket(l.up)) put_all(n, link_settings(), l);
    put_all(n, link::link_spec_params(), static_cast<const link::link_spec&>(l));
    root["links"].push_back(n);
  }
  YAML::Emitter e;
  e << root;
  return std::string(e.c_str()) + "\n";
}

}  // namespace p2psim::topo
