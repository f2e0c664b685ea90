// Device presets (topologies/devices/<name>.yaml): one product's settings, such as a GPU's BAR1
// and VRAM, that a topology's device takes with `model: <name>` (its own keys on top), the PCI
// IDs the product answers to (for importers), and the sources of its figures.
// docs/formats-topology.md, "Device presets".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/reader.h"

namespace p2psim::topo {

struct device_preset {
  explicit device_preset(config::document file) : doc(std::move(file)) {}
  std::string name, type, description, source;
  std::vector<uint32_t> pci_ids;  // vendor << 16 | device, as lspci -n prints them (10de:2331)
  config::document doc;           // the file: its settings are read per device
  config::node_reader settings() const { return doc.root(); }
};

// Reads one preset file; its name must match the file name, its type be a device kind.
device_preset load_device_preset(const std::string& path);

// Where device presets are: devices/ beside each platforms/ directory (topologies/devices
// beside topologies/platforms).
std::vector<std::string> device_preset_dirs(const std::vector<std::string>& platform_dirs);

// Presets by name, each read once.
class device_preset_finder {
 public:
  explicit device_preset_finder(std::vector<std::string> dirs) : m_dirs(std::move(dirs)) {}
  // The preset `name`; nullptr when there is none.
  const device_preset* find(const std::string& name);
  std::vector<std::string> names() const;  // every preset in the directories, sorted
  // The preset whose pci_ids hold vendor:device (nullopt: none).
  std::optional<std::string> for_pci_id(uint16_t vendor, uint16_t device);

 private:
  std::vector<std::string> m_dirs;
  std::map<std::string, device_preset> m_cache;
};

}  // namespace p2psim::topo
