// Physical bounds on what p2psim may report, worked out without any of its code: the topology
// file is read with yaml-cpp directly, the defaults are those docs/formats-topology.md states,
// and the arithmetic is docs/design.md's "PCIe timing" (raw rates, per-TLP overhead, DLLPs,
// SKIPs), which docs/architecture.md ("Timing model and why") says the links follow. Each bound
// is the most a path could do under those rules, so a report above it is impossible, whatever
// the simulator's own tables say:
//
// - bandwidth: no more than the narrowest link the path certainly crosses allows, counting for
//   each TLP the smallest overhead it could have (a 3DW header: 20 bytes on the wire) and the
//   largest payload it could carry (the sender's MPS; a re-emitting root complex's TLP size
//   behind it), no more than the socket interconnect and a root complex's P2P cap;
// - and no more than the credits of each link the data crosses let through: a TLP's credits
//   come back no sooner than a credit loop after it started (its way there and the UpdateFC's
//   way back, and a switch's latency if a switch holds it), so in any loop at most as many
//   TLPs start as the receiver advertises headers for, and at most 16 bytes per data credit
//   (for a read, its requests too: at most one per non-posted header credit);

// - latency: no less than the fixed delays of the path: every link's propagation, every
//   switch's and root complex's latency, the interconnect's, and for a read both ways and the
//   completer's access time.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace p2psim::oracle {

// One direction of a PCIe link: the payload bandwidth, GB/s (1e9 B/s), of `bytes` moved in
// TLPs of at most `payload` bytes with `overhead` bytes each, after DLLPs (ack_limit and
// fc_limit in bytes; 0: not known, counted as none) and SKIP ordered sets. The DLLPs due for the
// last TLP's bytes go after it, so a transfer of one TLP pays none.
double link_limit_gbps(int gen, int width, int ack_limit, int fc_limit, uint64_t bytes,
                       uint64_t payload, uint64_t overhead);

struct path_bound {
  double max_gbps = 0;
  double min_latency_ns = 0;
  std::string bottleneck;          // what sets max_gbps ("link gpu0", "interconnect", ...)
  std::vector<std::string> links;  // the links the path certainly crosses, by their `down`
  // To another socket: the interconnects at either end, one of which it crosses.
  std::vector<std::string> interconnects;
};

class machine_view {
 public:
  // `platforms_dir`: where `platform: NAME` presets are (topologies/platforms).
  machine_view(const std::string& topology_file, const std::string& platforms_dir);

  // A DMA of `streams` x `bytes` from `src` (a device) to or from `dst` (a device or a
  // socket's memory), all at once: the bandwidth bound is for all of them together.
  path_bound bound(const std::string& src, const std::string& dst, bool write, uint64_t bytes,
                   int streams) const;

 private:
  struct platform {
    double rc_latency_ns = 100, memory_latency_ns = 90, memory_gbps = 50;
    uint64_t completion_size = 64, p2p_tlp_size = 0;
    double p2p_latency_ns = 0, p2p_write_gbps = 0, p2p_read_gbps = 0;
    double interconnect_gbps = 20, interconnect_latency_ns = 100;
    double interconnect_p2p_write_gbps = 0, interconnect_p2p_read_gbps = 0;
  };
  struct node {
    std::string name, kind;  // socket, switch, gpu, dma_engine, nvme
    std::string parent;      // the node above (empty: a socket)
    int socket = -1;
    uint64_t mps = 256, mrrs = 512;
    double latency_ns = 0;  // switch: ingress to egress; GPU: a BAR1 read's access
    bool acs_redirect = false;
    // The link to the parent.
    int gen = 3, width = 16, ack_limit = 0, fc_limit = 0;
    bool ecrc = false;
    double link_latency_ns = 5;
    // What each end of the link advertises (docs/formats-topology.md; 0: infinite).
    uint64_t ph = 64, pd = 1024, nph = 64, cplh = 64, cpld = 1024;
  };
  struct socket {
    platform p;
    bool translating = false;
  };

  const node& at(const std::string& name) const;
  std::vector<std::string> chain(const std::string& name) const;  // name, parent, ... socket

  std::map<std::string, node> m_nodes;
  std::vector<socket> m_sockets;
  std::vector<double> m_interconnect_gbps, m_interconnect_latency_ns;
  struct interconnect_ends {
    std::string name;
    int a, b;  // socket indices
  };
  std::vector<interconnect_ends> m_interconnect_ends;
};

}  // namespace p2psim::oracle
