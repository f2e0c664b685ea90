#include "sim/topology/device_presets.h"

#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "models/device/registry.h"

namespace p2psim::topo {

namespace fs = std::filesystem;

device_preset load_device_preset(const std::string& path) {
  config::document doc = config::document::load(path);
  const config::node_reader r = doc.root();
  device_preset p{.doc = doc};
  const std::string stem = fs::path(path).stem().string();
  p.name = r.str("name", stem);
  if (p.name != stem)
    r.fail("name", fmt::format("preset '{}' must be in a file named {}.yaml (this is {}.yaml)",
                               p.name, p.name, stem));
  p.type = r.choice("type", device::kind_names());
  p.description = r.str("description");
  p.source = r.str("source");
  if (r.has("pci_devices"))
    for (const std::string& id : r.string_list("pci_devices")) {
      size_t used = 0;
      unsigned long v = 0;
      try {
        v = std::stoul(id, &used, 16);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != id.size() || id.size() != 4 || v > 0xffff)
        r.fail("pci_devices", fmt::format("'{}' is not a PCI device ID (four hex digits, as "
                                          "lspci -n prints after 10de:)",
                                          id));
      p.pci_devices.push_back(uint16_t(v));
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
  std::set<std::string> names;
  for (const auto& dir : m_dirs) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().extension() == ".yaml") names.insert(it->path().stem().string());
  }
  return {names.begin(), names.end()};
}

std::optional<std::string> device_preset_finder::for_pci_device(uint16_t device) {
  for (const auto& name : names())
    if (const device_preset* p = find(name))
      for (uint16_t id : p->pci_devices)
        if (id == device) return name;
  return std::nullopt;
}

}  // namespace p2psim::topo
