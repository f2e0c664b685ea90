// Command-line overrides, "--set a.b.c=value", applied to a YAML tree before it is read, so
// overridden values go through the same strict reader (and errors) as values in the file.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sim/config/reader.h"

namespace p2psim::config {

struct override_spec {
  std::string path;   // "link.gpu0.gen"
  std::string value;  // "4"
  std::string text;   // the original "link.gpu0.gen=4"
  source_loc from;    // where a file wrote it (a litmus test's `set:`); empty: the command line
  // Where errors about it point: the place in the file, else the option itself ("--set TEXT").
  source_loc origin() const { return from.file.empty() ? source_loc{"--set " + text, 0, 0} : from; }
};

// Splits "key=value" at the first '='. No '=', an empty path or an empty path segment
// ("a..b") -> config::error at "--set TEXT".
override_spec parse_override(std::string_view text);

// "a.b.c" -> {"a", "b", "c"}.
std::vector<std::string> split_path(std::string_view path);

// How path segments map onto a particular file format.
struct override_rules {
  // The first segment's key in the file: {"link", "links"}. Other segments are used as given.
  std::map<std::string, std::string, std::less<>> roots;
  // Keys holding lists, with the field that names their elements: {"links", "down"}. A list not
  // named here is searched by "name". A missing list is treated as empty (nothing to select).
  std::map<std::string, std::string, std::less<>> list_keys;
};

// Walks the path from the document's root map: a segment selects a map's key (created, as an
// empty map, when missing), or a list element whose naming field equals the segment, or else
// whose decimal index it is. The last segment's value becomes a YAML scalar; a value starting
// with '[' or '{' is parsed as a YAML flow list/map. Every node set is marked with
// spec.origin() so errors about it point at the --set. A path that selects nothing, or that
// runs into a plain value, is a config::error at spec.origin().
void apply_override(document& doc, const override_spec& spec, const override_rules& rules = {});

}  // namespace p2psim::config
