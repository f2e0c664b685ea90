// `nvidia-smi topo -m` text -> the text of a p2psim topology YAML file.
// `p2psim topo --import-nvidia-smi`.
//
// The matrix says, for each pair of devices, how far apart they are (SYS, NODE, PHB, PXB, PIX;
// NV# for NVLink), not what lies between them. The import builds the smallest PCIe tree that
// gives every pair the relation the matrix gives it: a socket per set of devices joined by
// anything but SYS, a host bridge per set joined by PHB or closer, a root port per set joined
// by PXB or closer, a switch per set joined by PIX, and one switch above those where a root
// port leads to several. It then loads the tree and classifies every pair again: a matrix no
// tree gives (a PIX b, b PIX c, a PXB c) is refused at the cell that disagrees.
// docs/formats-topology.md, "Importing from nvidia-smi", has the rules and the assumptions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace p2psim::topo {

struct smi_import_options {
  // Where the platform presets are looked for: the chosen one must be there (its max_gen sets
  // the links' generation) and the written file is loaded against them.
  std::vector<std::string> platform_dirs;
  // The sockets' preset; empty: skylake_sp, with a warning (the matrix does not name the CPU).
  std::string platform;
};

struct smi_import_result {
  std::string yaml;                   // the topology file's text
  std::vector<std::string> warnings;  // "FILE:LINE:COL: warning: ..." (also as comments)
};

// Throws config::error (file:line:col of the offending cell) on bad input.
smi_import_result import_smi_matrix(std::string_view text, const std::string& file,
                                    const smi_import_options& options);
smi_import_result import_smi_file(const std::string& path, const smi_import_options& options);

// ---- the rules, for tests -------------------------------------------------------------------

// How close two devices are, from a matrix cell: 1 PIX, 2 PXB, 3 PHB, 4 NODE, 5 SYS;
// 0 for NV# (NVLink hides the PCIe path); nullopt for anything else (X included).
std::optional<int> smi_closeness(std::string_view cell);

}  // namespace p2psim::topo
