// Where a value came from, for error messages: "file:line:column".
#pragma once

#include <string>

namespace p2psim::config {

struct source_loc {
  std::string file;  // a path, or "--set PATH=VALUE" for a command-line override
  int line = 0;      // 1-based; 0 = unknown
  int column = 0;    // 1-based
  std::string str() const {
    if (line == 0) return file;
    return file + ":" + std::to_string(line) + ":" + std::to_string(column);
  }
};

}  // namespace p2psim::config
