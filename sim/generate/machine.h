// The generator's own picture of a machine: a tree of sockets, root ports, switches and
// devices with every setting it chose. Written out as a topology file; the workload generator
// asks it which paths a platform routes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/generate/generate.h"

namespace p2psim::generate {

// SplitMix64: small, fast, and the same numbers everywhere.
class random_source {
 public:
  explicit random_source(uint64_t seed) : m_state(seed) {}
  uint64_t next() {
    uint64_t z = (m_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return n ? next() % n : 0; }                       // 0 .. n-1
  uint64_t between(uint64_t lo, uint64_t hi) { return lo + below(hi - lo + 1); }  // lo .. hi
  bool chance(int percent) { return below(100) < uint64_t(percent); }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[below(v.size())];
  }
  // Index i with probability weights[i] / sum.
  size_t weighted(const std::vector<int>& weights);

 private:
  uint64_t m_state;
};

enum class node_kind { socket, pcie_switch, gpu, dma_engine, nvme };

struct link_choice {
  int gen = 3, width = 16;
  uint64_t latency_ps = 5000;
  bool ecrc = false;
  int ack_limit = 0, fc_limit = 0;  // 0: the spec's tables
  // Receiver buffers in flow-control credits; empty: the defaults.
  std::string credits;  // "{ph: 8, pd: 64}" as written
  int host_bridge = 0;  // below a socket
};

struct node {
  std::string name;
  node_kind kind = node_kind::socket;
  int parent = -1;                    // index of the node above (-1: a socket)
  int socket = 0;                     // index of the socket it is below
  link_choice link;                   // the link to the parent (not for sockets)
  std::vector<std::string> settings;  // "key: value" of the node's own entry, as written
  // Switches: ACS P2P Request Redirect. Devices: what they expose to peers, in bytes.
  bool acs_redirect = false;
  uint64_t target_bytes = 0;  // GPU: BAR1 less reserved; DMA engine: BAR2
  uint64_t local_bytes = 0;   // what an initiator can read from / write into
  int mps = 256;
};

struct socket_choice {
  int host_bridges = 1;
  bool translating = false;  // IOMMU mode translating
  std::string iommu;         // the `iommu:` map as written; empty: none
  uint64_t memory = 0;
};

struct machine {
  platform_facts platform;
  std::vector<node> nodes;  // sockets first, in order
  std::vector<socket_choice> sockets;
  std::vector<std::pair<int, int>> interconnects;  // socket indices
  std::vector<std::string> interconnect_settings;  // as written, one per interconnect
  std::string pcie;                                // the top-level `pcie:` map as written
  int mps = 256, mrrs = 512;

  bool is_device(int i) const { return nodes[i].kind >= node_kind::gpu; }
  // Whether the platform routes a DMA from device a to b (a device or a socket's memory).
  bool routes(int a, int b, bool write) const;
  std::string topology_yaml(const std::string& name, uint64_t seed) const;
};

machine generate_machine(random_source& r, const std::vector<platform_facts>& platforms);

// "1KiB", "64MiB", "100B": the largest binary unit that divides it.
std::string size_text(uint64_t bytes);
std::string time_text(uint64_t ps);

}  // namespace p2psim::generate
