// The hardware description: what a topology YAML file says, typed and with units resolved.
// Plain data, no SystemC: the settings are the models' own declared specs. Loaded by
// topology_loader, checked and enumerated by topology_graph, turned into SystemC modules by
// core::fabric_system (sim/core/system.h, system.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/device/device_kind.h"
#include "models/iommu/iommu_spec.h"
#include "models/link/link_spec.h"
#include "models/pcie/device_control.h"
#include "models/pcie/dllp_rates.h"
#include "models/root_complex/platform_spec.h"
#include "models/switch/switch_spec.h"
#include "sim/config/source_loc.h"

namespace p2psim::topo {

// Where each key of an element was written (the location of its value), for checks that run
// after loading. Empty for elements built in code; loc_of() then falls back to the element.
using key_locations = std::map<std::string, config::source_loc>;

// Each element holds the settings its model declares (models/*/..._spec.h), read through
// those declarations, plus where it sits in the topology and where its keys were written.

struct link_params : link::link_spec {
  std::string up;       // upstream node: a socket or a switch
  std::string down;     // downstream node: a switch or an endpoint; also the link's name
  int host_bridge = 0;  // with a socket as `up`: which of its host bridges the root port is on
  config::source_loc loc;
  key_locations key_locs;
};

// A platform preset (topologies/platforms/<name>.yaml): one CPU family's root complex, memory
// and socket interconnect.
struct platform_params {
  std::string name;
  std::string description;
  root_complex::platform_spec spec;
  config::source_loc loc;
  key_locations key_locs;
};

struct socket_params {
  std::string name;
  std::string platform_name;
  root_complex::platform_spec platform;  // the preset with this socket's overrides applied
  // The socket's IOMMU, for every device below it (GPUDirect RDMA 13.3, 5.4 IOMMUs;
  // docs/design.md, "Topology classes").
  iommu::iommu_spec iommu;
  uint64_t memory_bytes = 16ull << 30;
  int host_bridges = 1;
  config::source_loc loc;
  key_locations key_locs;
};

struct interconnect_params : link::interconnect_spec {  // unset keys: socket a's platform values
  std::string name;
  std::string a, b;  // the two sockets
  config::source_loc loc;
  key_locations key_locs;
};

struct switch_params : pcie_switch::switch_spec {
  std::string name;
  std::string model;  // its switch preset (topologies/devices/, `type: switch`), if any
  config::source_loc loc;
  key_locations key_locs;
};

// A device: what every device has (its place, PCIe settings, BAR0) and the settings its kind
// declares (models/device/device_kind.h; `type:` names the kind).
struct device_params {
  std::string name;
  std::string model;                  // its device preset (topologies/devices/), if any
  device::config_value settings;      // its kind's; never empty once loaded
  pcie::device_control control;       // the topology's `pcie` values with the device's own on top
  pcie::dllp_rates dllps;             // how it acknowledges what it receives
  uint64_t bar0_bytes = 16ull << 20;  // registers
  std::optional<uint64_t> bar0_address;
  config::source_loc loc;
  key_locations key_locs;

  const device::device_kind& kind() const { return settings->kind(); }
  // The settings as kind `Spec`'s, or nullptr if the device is of another kind.
  template <class Spec>
  const Spec* spec() const {
    return device::spec_of<Spec>(*settings);
  }
  template <class Spec>
  Spec* spec() {
    return device::spec_of<Spec>(*settings);
  }
};

// A device of `kind` ("gpu") named `name`, with its kind's defaults; std::invalid_argument for
// a kind that is not registered.
device_params make_device(const std::string& name, const std::string& kind);

struct pcie_defaults : pcie::device_control {
  config::source_loc loc;
  key_locations key_locs;
};

struct topology {
  std::string name;
  std::string description;
  std::string file;        // path it was loaded from
  config::source_loc loc;  // the file's top level
  key_locations key_locs;  // of the top-level keys
  pcie_defaults pcie;
  std::vector<socket_params> sockets;
  std::vector<interconnect_params> interconnects;
  std::vector<switch_params> switches;
  std::vector<device_params> devices;
  std::vector<link_params> links;
  // Sockets of different platform presets, on purpose (`mixed_platforms: true`): refused
  // otherwise, as a --set on one socket of a real machine would be.
  bool mixed_platforms = false;
  // What the loader chose on the user's behalf, "FILE:LINE:COL: ..." (reports print them).
  std::vector<std::string> warnings;

  const device_params* find_device(const std::string& name) const;
  const socket_params* find_socket(const std::string& name) const;
  const switch_params* find_switch(const std::string& name) const;
  const link_params* link_above(const std::string& node) const;  // nullptr for sockets
  const interconnect_params* find_interconnect(const std::string& name) const;
  // Links whose `up` is `node`, in file order (for a socket: all host bridges).
  std::vector<const link_params*> links_below(const std::string& node) const;
  int socket_index(const std::string& name) const;  // -1 if there is no such socket
};

// Where `key` of an element was written, else where the element starts.
template <class T>
config::source_loc loc_of(const T& element, const std::string& key) {
  auto it = element.key_locs.find(key);
  return it != element.key_locs.end() ? it->second : element.loc;
}

}  // namespace p2psim::topo
