// Every setting a topology or platform file takes, gathered from the models' declarations
// (models/*/..._spec.h) plus the few the topology itself owns (where a node sits, BAR0): the
// loader reads through these tables, docs/formats-topology.md shows them, and the effective
// configuration is written from them.
#pragma once

#include <string>
#include <vector>

#include "models/params/param.h"
#include "sim/config/param_docs.h"
#include "sim/topology/topology.h"

namespace p2psim::topo {

// The settings of a socket (besides its platform's), of a link (besides the link model's) and
// of every device (besides its type's).
const params::table<socket_params>& socket_settings();
const params::table<link_params>& link_settings();
const params::table<device_params>& device_settings();

struct parameter_table {
  std::string name;  // as docs name the block: "switches", "devices.gpu", "platform"
  std::vector<config::param_row> rows;
};
std::vector<parameter_table> parameter_tables();

// `doc` with the body of every "<!-- parameters: NAME -->" ... "<!-- end parameters -->" block
// regenerated from parameter_tables(). An unknown NAME or an unclosed block -> runtime_error.
std::string regenerate_parameter_blocks(const std::string& doc);

// The topology with every setting written out, as a topology file that loads back to the same
// topology (`p2psim topo FILE --effective`).
std::string effective_yaml(const topology& t);

}  // namespace p2psim::topo
