// Shared by reader.cpp and reader_values.cpp; not part of the public API.
#pragma once

#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "sim/config/source_loc.h"

namespace p2psim::config::detail {

struct doc_state {
  std::string file;
  YAML::Node tree;
  // Nodes made by overrides, with where the override came from; searched by identity
  // (YAML::Node::is).
  std::vector<std::pair<YAML::Node, source_loc>> origins;
};

// "a map", "a list", "'text'" or "nothing", for "expected X, got Y".
std::string describe(const YAML::Node& n);
std::string join(const std::vector<std::string>& items);  // "a, b, c"
std::string join(std::initializer_list<const char*> items);

}  // namespace p2psim::config::detail
