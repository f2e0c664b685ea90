// Shared by reader.cpp and reader_values.cpp; not part of the public API.
#pragma once

#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace p2psim::config::detail {

struct doc_state {
  std::string file;
  YAML::Node tree;
  // Nodes made by overrides, with the override's text; searched by identity (YAML::Node::is).
  std::vector<std::pair<YAML::Node, std::string>> origins;
};

// "a map", "a list", "'text'" or "nothing", for "expected X, got Y".
std::string describe(const YAML::Node& n);
std::string join(const std::vector<std::string>& items);  // "a, b, c"
std::string join(std::initializer_list<const char*> items);

}  // namespace p2psim::config::detail
