// Human-readable views of a topology for `p2psim topo`: an lspci -t like tree, the
// `nvidia-smi topo -m` matrix, and Graphviz DOT.
#pragma once

#include <ostream>

#include "sim/topology/address_map.h"
#include "sim/topology/topology.h"

namespace p2psim::topo {

// Per socket and host bridge: bus:dev.fn, link gen/width, bus ranges, windows, BARs.
void print_tree(std::ostream& os, const topology& t, const address_map& map);

// Rows and columns: GPUs, then DMA engines, each named in upper case (gpu0 -> GPU0); cells
// X/PIX/PXB/PHB/NODE/SYS; then CPU Affinity (socket name) and NUMA Affinity (socket index);
// then nvidia-smi's legend and the GPUDirect RDMA class legend. Tab-separated as nvidia-smi.
void print_topo_matrix(std::ostream& os, const topology& t);

// Graphviz: sockets (box3d), host bridges (when more than one), switches (box), GPUs (filled
// box), DMA engines (ellipse); edges labelled "Gen4 x16" or "upi0 20.8 GB/s".
void write_dot(std::ostream& os, const topology& t);

}  // namespace p2psim::topo
