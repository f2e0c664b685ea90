// Reads declared parameters (models/params/param.h) from a YAML map with the strict reader: each
// key through the getter of its unit, its limits checked, errors at the value's line and column
// naming the key; a key a table does not declare is left for done() to report as unknown.
//
//   switch_spec s;                                 // the defaults
//   config::read_params(r, switch_spec_params(), s);  // file values over them
//   r.done();
//
// Dotted keys ("p2p.write.routed") are read from nested maps, each checked for unknown keys.
#pragma once

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "models/params/param.h"
#include "sim/config/reader.h"

namespace p2psim::config {

// Reads one value of `d` at `key` in `r`, `current` when the key is absent. Checks the unit and
// the limits; an error names the key.
params::value read_value(const node_reader& r, const std::string& key, const params::declaration& d,
                         const params::value& current);

// Reads the bound parameters `ps` below `section` ("" for all) from the map `r`: each value the
// parameter holds is its default. Does not call r.done(): the caller's map may hold other keys.
void read_params(const node_reader& r, const std::vector<params::bound>& ps,
                 const std::string& section = "");

// The same for a spec and its table.
template <class Spec>
void read_params(const node_reader& r, const params::table<Spec>& t, std::type_identity_t<Spec>& s,
                 const std::string& section = "") {
  read_params(r, params::bind(t, s), section);
}

}  // namespace p2psim::config
