// Internal to the NCCL import: what the walk over the XML found, handed to the YAML writer.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/topology/nccl_import.h"

namespace p2psim::topo::detail {

enum class nccl_kind { socket, pcie_switch, gpu, nic };

struct nccl_entity {
  nccl_kind kind;
  pci_busid bus;         // devices are named in bus order
  std::string comment;   // the NCCL bus ID and what else identifies the element
  std::string platform;  // sockets: the preset
  std::string name;      // given once the walk is done
  std::string model;     // GPUs: the device preset of their PCI IDs, if there is one
};

struct nccl_link {
  size_t up, down;  // entity indices
  int gen, width;
  std::string comment;
};

struct nccl_tree {
  std::string file;  // the XML file's name
  std::vector<nccl_entity> entities;
  std::vector<size_t> sockets, switches, gpus, nics;  // entity indices, in name order
  std::vector<nccl_link> links;                       // in the XML's depth-first order
  std::vector<std::string> platform_notes;            // per socket: which preset, and why
  std::vector<std::string> skipped;                   // elements left out, and why
  bool has_nvlink = false;
  bool mixed_platforms = false;  // the CPUs map to different presets
};

std::string write_nccl_yaml(const nccl_tree& tree);

// Shared by the importers (NCCL XML, nvidia-smi text) that write topology files.
// YAML comments are one line: keeps what an imported field may smuggle in out of them.
std::string one_line(std::string_view s);
// A double-quoted YAML scalar.
std::string yaml_quoted(std::string_view s);
// Interconnects named as the vendors call them: qpi, upi or xgmi after the socket's preset.
std::string interconnect_prefix(const std::string& preset);
// An importer's input file, whole; config::error when it is missing, a directory (`expected`
// says what should be there) or unreadable.
std::string read_import_file(const std::string& path, const std::string& expected);
// Lines of a list (text, comment) with their comments lined up.
void write_block(std::ostream& os, const std::vector<std::pair<std::string, std::string>>& rows);

}  // namespace p2psim::topo::detail
