#include "tools/p2psim/output_file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "sim/config/error.h"

namespace p2psim::cli {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void cannot(const std::string& option, const std::string& why) {
  throw config::error(config::source_loc{}, option, why);
}

}  // namespace

void check_writable(const std::string& option, const std::string& path) {
  if (path.empty()) cannot(option, "needs a file name (or - for standard output)");
  if (is_stdout(path)) return;
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) cannot(option, path + " is a folder, not a file");
  if (fs::exists(p, ec)) {
    if (access(path.c_str(), W_OK) != 0) cannot(option, "cannot write " + path + " (not writable)");
    return;
  }
  const fs::path folder = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(folder, ec))
    cannot(option, "no folder " + folder.string() + " to write " + path + " in");
  if (access(folder.c_str(), W_OK) != 0)
    cannot(option,
           "cannot write " + path + " (the folder " + folder.string() + " is not writable)");
}

void write_output(const std::string& option, const std::string& path, const std::string& text) {
  if (is_stdout(path)) {
    std::cout << text << std::flush;
    return;
  }
  std::ofstream f(path);
  if (!(f << text) || !f.flush()) cannot(option, "could not write " + path);
}

}  // namespace p2psim::cli
