// One third-party pin as the NVIDIA driver model keeps it: the page table handed out, the
// frames it holds, and its life cycle. Private to the driver model.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "models/driver/nvidia/nvidia_driver.h"

namespace p2psim::nv {

struct dma_mapping_record {
  nvidia_p2p_dma_mapping_t mapping{};
  std::vector<uint64_t> addresses;
  pci_dev* peer = nullptr;
  bool translated = false;  // addresses are IOVAs to unmap from peer->iommu
};

struct nvidia_driver::pin {
  enum class state {
    live,         // handed out, usable
    in_callback,  // its free callback is running; torn down when it returns
  };
  uint64_t id = 0;
  state st = state::live;
  nvidia_p2p_page_table_t table{};
  std::vector<nvidia_p2p_page_t> pages;
  std::vector<nvidia_p2p_page_t*> page_ptrs;
  std::array<uint8_t, NVIDIA_P2P_GPU_UUID_LEN> uuid{};
  kernel::pid_t caller = 0;      // the process get_pages ran in
  kernel::pid_t memory_pid = 0;  // whose memory is pinned
  int ctx = 0;                   // the context whose VA space holds it (its tokens release it)
  int gpu = 0;
  uint64_t va = 0, length = 0;
  bool persistent = false;
  bool legacy = false;  // persistent by a NULL callback (before R535): put_pages releases it
  void (*callback)(void*) = nullptr;
  void* data = nullptr;
  std::vector<uint64_t> frames;      // per entry
  std::vector<uint64_t> bar1_pages;  // per entry
  std::vector<std::unique_ptr<dma_mapping_record>> mappings;
};

}  // namespace p2psim::nv
