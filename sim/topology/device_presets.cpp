#include "sim/topology/device_presets.h"

#include <fmt/format.h>

#include <filesystem>
#include <regex>

#include "models/device/registry.h"
#include "sim/topology/topology_loader.h"

namespace p2psim::topo {

namespace fs = std::filesystem;

device_preset load_device_preset(const std::string& path) {
  config::document doc = config::document::load(path);
  const config::node_reader r = doc.root();
  device_preset p(doc);
  const std::string stem = fs::path(path).stem().string();
  p.name = r.str("name", stem);
  if (p.name != stem)
    r.fail("name", fmt::format("preset '{}' must be in a file named {}.yaml (this is {}.yaml)",
                               p.name, p.name, stem));
  std::vector<std::string> kinds = device::kind_names();
  kinds.push_back("switch");  // a PCIe switch's settings (`switches[]`), not a device
  p.type = r.choice("type", kinds);
  p.description = r.str("description");
  p.source = r.str("source");
  if (r.has("pci_ids"))
    for (const std::string& id : r.string_list("pci_ids")) {
      static const std::regex form("([0-9a-f]{4}):([0-9a-f]{4})");
      std::smatch m;
      if (!std::regex_match(id, m, form))
        r.fail("pci_ids", fmt::format("'{}' is not a PCI vendor:device ID (four lower-case hex "
                                      "digits each, as lspci -n prints them: 10de:2331)",
                                      id));
      p.pci_ids.push_back(uint32_t(std::stoul(m[1].str(), nullptr, 16) << 16 |
                                   std::stoul(m[2].str(), nullptr, 16)));
    }
  return p;  // the settings are read, and unknown keys refused, per device (topology_loader)
}

std::vector<std::string> device_preset_dirs(const std::vector<std::string>& platform_dirs) {
  std::vector<std::string> out;
  for (const auto& d : platform_dirs)
    out.push_back((fs::path(d).parent_path() / "devices").string());
  return out;
}

const device_preset* device_preset_finder::find(const std::string& name) {
  if (auto it = m_cache.find(name); it != m_cache.end()) return &it->second;
  const bool plain =
      !name.empty() &&
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
  if (plain)
    for (const auto& dir : m_dirs) {
      const fs::path file = fs::path(dir) / (name + ".yaml");
      std::error_code ec;
      if (fs::is_regular_file(file, ec))
        return &m_cache.emplace(name, load_device_preset(file.string())).first->second;
    }
  return nullptr;
}

std::vector<std::string> device_preset_finder::names() const {
  return available_platforms(m_dirs);  // the YAML files' names, as for platform presets
}

std::optional<std::string> device_preset_finder::for_pci_id(uint16_t vendor, uint16_t device) {
  const uint32_t want = uint32_t(vendor) << 16 | device;
  for (const auto& name : names())
    if (const device_preset* p = find(name))
      for (uint32_t id : p->pci_ids)
        if (id == want) return name;
  return std::nullopt;
}

}  // namespace p2psim::topo
