// Reading the sections of a platform preset; the same keys override a preset per socket.
// Internal to the topology loader.
#pragma once

#include "sim/config/reader.h"
#include "sim/topology/topology.h"

namespace p2psim::topo::detail {

// Each reads its section's keys into `p`, keeping p's current value for absent keys, and
// rejects unknown keys.
void read_root_complex(const config::node_reader& r, platform_params& p);
void read_memory(const config::node_reader& r, platform_params& p);        // preset `memory`
void read_interconnect(const config::node_reader& r, platform_params& p);  // QPI/UPI
// A socket's `iommu` section (not part of presets: it is how the machine is booted).
iommu_config read_iommu(const config::node_reader& r);

}  // namespace p2psim::topo::detail
