// What the fuzz targets share: the contract, and a file for loaders that read paths.
//
// The contract of every loader: any input either loads or is refused with config::error
// (which the CLI turns into exit code 2 and FILE:LINE:COL). Any other exception escapes the
// target, so libFuzzer reports it as a crash, as it does a sanitizer finding or a hang.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace p2psim::fuzz {

// The source tree's topologies (platform presets) and a scratch folder in the build tree
// where an input is written as a file: <work>/a/b/input.yaml, with <work>/topologies and
// <work>/a/topologies leading to the source tree's, so that the seeds' relative topology
// paths (../topologies/..., ../../topologies/...) resolve.
inline std::filesystem::path source_dir() {
  return P2PSIM_SOURCE_DIR;
}

inline std::string write_input(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  static const fs::path file = [] {
    fs::path work = fs::path(P2PSIM_FUZZ_WORK_DIR) / std::to_string(getpid());
    fs::create_directories(work / "a" / "b");
    for (const fs::path& link : {work / "topologies", work / "a" / "topologies"})
      if (!fs::exists(link)) fs::create_directory_symlink(source_dir() / "topologies", link);
    return work / "a" / "b" / "input.yaml";
  }();
  std::ofstream(file, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), std::streamsize(size));
  return file.string();
}

}  // namespace p2psim::fuzz
