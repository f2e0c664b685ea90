// Reading what `nvidia-smi topo -m` prints into a matrix of relations (smi_import.h builds a
// topology from it): internal to the import.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/config/source_loc.h"

namespace p2psim::topo::detail {

struct smi_device {
  std::string label;  // as nvidia-smi names it: GPU0, NIC1, mlx5_0
  std::string name;   // in the topology: gpu0, nic1 (given by the import)
  bool gpu = false;
  config::source_loc loc;                 // its row
  std::string cpus, numa;                 // affinity, when the row gives it ("N/A" dropped)
  std::string nic_name;                   // from the NIC legend
  std::vector<config::source_loc> cells;  // where each of its row's cells is
};

struct smi_matrix {
  std::string file;
  std::vector<smi_device> devices;              // in the header's order
  std::vector<std::vector<std::string>> cells;  // [row][column]: X, SYS, ..., PIX, NV#
  int header_line = 1;
};

// Throws config::error at the offending cell: a missing or short row, a cell that is not a
// relation, a device not X to itself, a matrix that is not symmetric.
smi_matrix read_smi_matrix(std::string_view text, const std::string& file);

// A cell in a message: one line, not too long.
std::string shown(const std::string& s);

}  // namespace p2psim::topo::detail
