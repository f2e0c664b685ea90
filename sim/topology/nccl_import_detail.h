// Internal to the NCCL import: what the walk over the XML found, handed to the YAML writer.
#pragma once

#include <string>
#include <string_view>
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

// YAML comments are one line: keeps what an XML attribute may smuggle in out of them.
std::string one_line(std::string_view s);

}  // namespace p2psim::topo::detail
