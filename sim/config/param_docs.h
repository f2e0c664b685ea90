// What declared parameters (models/params/param.h) look like to a reader: a row per parameter
// for the tables in docs/ and `p2psim params`, and each value as a file would write it, for the
// effective-configuration dump.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "models/params/param.h"

namespace p2psim::config {

struct param_row {
  std::string key;
  std::string type;          // "size, a power of two from 128B to 4KiB", "integer 1..5"
  std::string default_text;  // "`110ns`", or what an unset value means
  std::string meaning;
};

// The type column: the unit and what the limits allow.
std::string type_text(const params::declaration& d);
// A value as a file writes it ("110ns", "4KiB", "true"); empty for an unset optional.
std::string format_value(const params::declaration& d, const params::value& v);

// A row per parameter; the values the parameters hold are the defaults.
std::vector<param_row> rows(const std::vector<params::bound>& ps);
template <class Spec>
std::vector<param_row> rows(const params::table<Spec>& t, const Spec& defaults = Spec{}) {
  return rows(params::bind(t, defaults));
}

// Key and formatted value of every set parameter, in declaration order.
std::vector<std::pair<std::string, std::string>> values(const std::vector<params::bound>& ps);
template <class Spec>
std::vector<std::pair<std::string, std::string>> values(const params::table<Spec>& t,
                                                        const Spec& s) {
  return values(params::bind(t, s));
}

// | Key | Type | Default | Meaning |, a row each, for docs/.
std::string markdown_table(const std::vector<param_row>& rows);

// `doc` with the body of every "<!-- MARKER: NAME -->" ... "<!-- end MARKER -->" block (each
// marker a line of its own) replaced by tables.at(NAME). An unknown NAME or an unclosed block
// -> std::runtime_error.
std::string regenerate_blocks(const std::string& doc, const std::string& marker,
                              const std::map<std::string, std::string>& tables);

}  // namespace p2psim::config
