// Topology files (YAML, see docs/formats-topology.md) -> a checked topo::topology.
#pragma once

#include <string>
#include <vector>

#include "sim/config/overrides.h"
#include "sim/config/reader.h"
#include "sim/topology/topology.h"

namespace p2psim::topo {

struct load_options {
  // Where platform presets (NAME.yaml) are looked for, after <topology file's dir>/platforms/.
  std::vector<std::string> platform_dirs;
  // Topology overrides (is_topology_override); anything else is an error.
  std::vector<config::override_spec> overrides;
};

// Loads, applies overrides, reads and checks (check_topology, which also enumerates).
// Throws config::error.
topology load_topology(const std::string& path, const load_options& options = {});
// Same, for a document already in memory (tests, generated topologies). Overrides in `options`
// are applied to `doc`.
topology load_topology(config::document& doc, const load_options& options = {});

// The first path segment is one of link, switch, device, socket, interconnect, pcie.
bool is_topology_override(const config::override_spec& spec);
// How --set paths map onto topology files: link.<down>, device.<name>, ...
const config::override_rules& topology_override_rules();

// Reads one platform preset file; its name must match the file name.
platform_params load_platform(const std::string& path);
// Preset names (file stems) found in `dirs`, sorted, without duplicates.
std::vector<std::string> available_platforms(const std::vector<std::string>& dirs);

}  // namespace p2psim::topo
