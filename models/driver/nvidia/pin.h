// One third-party pin as the NVIDIA driver model keeps it: the page table handed out, where
// its pages live, and its life cycle. Private to the driver model.
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
  bool released = false;    // unmapped or freed
};

struct nvidia_driver::pin {
  enum class state {
    live,         // handed out, usable
    in_callback,  // the free callback is running
    revoked,      // the callback returned; BAR1 pages are gone
    released,     // put_pages returned it
  };
  nvidia_p2p_page_table_t table{};
  std::vector<nvidia_p2p_page_t> pages;
  std::vector<nvidia_p2p_page_t*> page_ptrs;
  std::array<uint8_t, NVIDIA_P2P_GPU_UUID_LEN> uuid{};
  kernel::pid_t caller = 0;      // the process get_pages ran in
  kernel::pid_t memory_pid = 0;  // whose memory is pinned
  uint64_t p2p_token = 0;
  uint32_t va_space_token = 0;
  int gpu = 0;
  uint64_t va = 0, length = 0;
  bool persistent = false;
  void (*callback)(void*) = nullptr;
  void* data = nullptr;
  std::vector<uint64_t> vram_pages;  // per entry
  std::vector<uint64_t> bar1_pages;  // per entry
  state st = state::live;
  bool table_freed = false;
  std::vector<std::unique_ptr<dma_mapping_record>> mappings;

  bool covers_page(uint64_t va_page_number) const {
    return va_page_number >= va / gpu_page_bytes && va_page_number < (va + length) / gpu_page_bytes;
  }
};

}  // namespace p2psim::nv
