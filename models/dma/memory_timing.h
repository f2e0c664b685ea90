// How fast a memory answers PCIe requests: host DRAM behind a root complex, GPU VRAM behind
// BAR1, a DMA device's on-board memory. Plain data, read by memory_completer.
#pragma once

#include <cstdint>

namespace p2psim::dma {

struct memory_timing {
  double latency_ns = 100;   // request in to first completion out
  double bandwidth_gbs = 0;  // data path; 0 = unlimited
  uint32_t cpl_bytes = 256;  // completion size (MPS, or 64 for RCB-split completers)
  uint32_t rcb = 64;
};

}  // namespace p2psim::dma
