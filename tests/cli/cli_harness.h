// Runs the p2psim binary as a user would and captures its exit code, stdout and stderr.
#pragma once

#include <sys/wait.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace p2psim::test {

struct cli_result {
  int exit_code = -1;
  std::string out, err;
};

// A file's whole contents, byte for byte ("" if it cannot be read).
inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A path for an output file in the build tree, with no file there yet.
inline std::string in_build(const std::string& name) {
  const std::filesystem::path p = std::filesystem::path(P2PSIM_BUILD_DIR) / name;
  std::filesystem::remove(p);
  return p.string();
}

// A JSON file a command wrote.
inline nlohmann::json read_json(const std::string& file) {
  std::ifstream f(file);
  return nlohmann::json::parse(f);
}

// Each transfer's time in seconds from a run's JSON `bandwidth` list, by name; with
// `copies_only`, only a program's named CUDA copies (the entries with a `call`).
inline std::map<std::string, double> seconds_by_transfer(const nlohmann::json& run,
                                                         bool copies_only = false) {
  std::map<std::string, double> t;
  for (const nlohmann::json& b : run["bandwidth"])
    if (!copies_only || b.contains("call"))
      t[b["transfer"].get<std::string>()] = b["seconds"].get<double>();
  return t;
}

// With `timeout_seconds`, timeout(1) ends the command after that long (exit code 124), so a
// hang fails the test instead of blocking the whole suite.
inline cli_result run_cli(const std::string& args, int timeout_seconds = 0) {
  static std::atomic<int> n = 0;  // tests may run several commands at once
  std::string err_file = "cli_stderr_" + std::to_string(::getpid()) + "_" + std::to_string(n++);
  std::string limit =
      timeout_seconds > 0 ? "timeout -k 10 " + std::to_string(timeout_seconds) + " " : "";
  std::string cmd = std::string("cd " P2PSIM_SOURCE_DIR " && ") + limit + P2PSIM_BIN " " + args +
                    " 2>" + std::string(P2PSIM_BUILD_DIR) + "/" + err_file;
  cli_result r;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf;
  size_t got;
  while ((got = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), got);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = read_text(std::string(P2PSIM_BUILD_DIR) + "/" + err_file);
  std::remove((std::string(P2PSIM_BUILD_DIR) + "/" + err_file).c_str());
  return r;
}

}  // namespace p2psim::test
