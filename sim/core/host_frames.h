// The sockets' DRAM as the simulated kernel hands it out (kernel::physical_memory): NUMA node
// i is the topology's i-th socket, and a frame's bus address is where that socket's memory
// window puts it. Blocks of user memory take ranges first fit from the bottom, below the top
// 256 MiB, which is where the CUDA driver stages copies (copy_engine_executor): both are kept
// in one map of taken ranges per socket, so they never overlap.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "models/driver/kernel/user_memory.h"
#include "sim/core/system.h"

namespace p2psim::core {

class host_frames final : public kernel::physical_memory {
 public:
  // The CUDA driver's staging area at the top of each socket's memory.
  static constexpr uint64_t staging_bytes = 256ull << 20;

  explicit host_frames(fabric_system& sys);
  int nodes() const override { return int(m_nodes.size()); }
  std::optional<uint64_t> allocate(int node, uint64_t bytes) override;
  void free(uint64_t bus, uint64_t bytes) override;
  void read(uint64_t bus, std::span<uint8_t> out) const override;
  void write(uint64_t bus, std::span<const uint8_t> in) override;

  // The taken ranges of a socket's memory, by offset, with their lengths.
  std::map<uint64_t, uint64_t>& taken(const root_complex::root_complex& rc);
  // The store and offset of the byte at `bus`.
  std::pair<memory::backing_store*, uint64_t> locate(uint64_t bus) const;
  // The NUMA node of socket `name`, or -1.
  int node_of(const std::string& name) const;

 private:
  struct node {
    root_complex::root_complex* rc = nullptr;
    std::map<uint64_t, uint64_t> taken;
  };
  // The node whose memory holds [bus, bus + bytes), and the offset of bus in it.
  std::pair<const node*, uint64_t> holding(uint64_t bus, uint64_t bytes) const;
  std::vector<node> m_nodes;
};

}  // namespace p2psim::core
