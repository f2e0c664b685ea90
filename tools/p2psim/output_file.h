// The files a command writes on request (--json, --csv, --dot, --junit, -o): each a path, or
// `-` for standard output. Every command checks them before it simulates anything, so a path
// that cannot be written costs no run, and writes them through one function.
#pragma once

#include <string>

namespace p2psim::cli {

inline bool is_stdout(const std::string& path) {
  return path == "-";
}

// Bad input (exit 2, naming `option`) unless `path` is `-`, or a file that exists and can be
// written, or one that can be made in a folder that exists. Nothing is created.
void check_writable(const std::string& option, const std::string& path);

// Writes `text` to `path` (`-`: standard output); exit 2 naming `option` if it cannot.
void write_output(const std::string& option, const std::string& path, const std::string& text);

}  // namespace p2psim::cli
