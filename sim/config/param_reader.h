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

namespace detail {
// The entries of a table (by index) below `section`, with their keys relative to it.
struct entry_ref {
  size_t index;
  std::string key;
};
std::vector<entry_ref> below(const std::vector<const params::declaration*>& decls,
                             const std::string& section);
}  // namespace detail

template <class Spec>
void read_entries(const node_reader& r, const params::table<Spec>& t, Spec& s,
                  const std::vector<detail::entry_ref>& entries) {
  std::vector<std::string> sections;  // nested maps, in declaration order
  for (const auto& e : entries) {
    const auto dot = e.key.find('.');
    if (dot == std::string::npos) {
      const auto& p = t[e.index];
      p.set(s, read_value(r, e.key, p, p.get(s)));
      continue;
    }
    const std::string first = e.key.substr(0, dot);
    if (std::find(sections.begin(), sections.end(), first) != sections.end()) continue;
    sections.push_back(first);
    auto child = r.optional_child(first);
    if (!child) continue;
    std::vector<detail::entry_ref> inner;
    for (const auto& f : entries)
      if (f.key.compare(0, first.size() + 1, first + ".") == 0)
        inner.push_back({f.index, f.key.substr(first.size() + 1)});
    read_entries(*child, t, s, inner);
    child->done();
  }
}

// Reads the parameters of `t` below `section` ("" for all) from the map `r` into `s`; the
// values `s` holds are the defaults. Does not call r.done(): the caller's map may hold other
// keys too.
template <class Spec>
void read_params(const node_reader& r, const params::table<Spec>& t, std::type_identity_t<Spec>& s,
                 const std::string& section = "") {
  std::vector<const params::declaration*> decls;
  for (const auto& p : t) decls.push_back(&p);
  read_entries(r, t, s, detail::below(decls, section));
}

}  // namespace p2psim::config
