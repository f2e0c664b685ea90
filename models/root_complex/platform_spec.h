// What a platform preset (topologies/platforms/NAME.yaml) says about one CPU family: its root
// complex, its memory and its socket interconnect, and how each forwards peer-to-peer traffic
// (GPUDirect RDMA 13.3, 5.4; docs/design.md, "Topology classes"; docs/formats-topology.md,
// "Platform presets"). A socket may override any of it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "models/dma/memory_timing.h"
#include "models/link/link_spec.h"
#include "models/params/param.h"
#include "models/pcie/dllp_rates.h"

namespace p2psim::root_complex {

// Whether and how fast a root complex forwards one kind of peer request.
struct p2p_policy {
  bool routed = true;        // false: the request is answered with Unsupported Request
  double bandwidth_gbs = 0;  // forwarding throughput cap; 0: no cap
  uint32_t outstanding = 0;  // reads: requests forwarded at once; 0: no limit
};

// Of two sockets' policies for one crossing, the stricter: routed only where both route, the
// lower throughput cap and the fewer reads at once (0, no limit, is the loosest). A machine of
// mixed platforms applies it across its interconnect (docs/formats-topology.md, "Mixed
// platforms").
inline p2p_policy stricter(const p2p_policy& a, const p2p_policy& b) {
  auto lower_limit = [](auto x, auto y) { return !x ? y : !y ? x : std::min(x, y); };
  return {a.routed && b.routed, lower_limit(a.bandwidth_gbs, b.bandwidth_gbs),
          lower_limit(a.outstanding, b.outstanding)};
}

// Peer-to-peer forwarding between root ports, or onto the interconnect.
struct forwarding_spec {
  p2p_policy write, read;
  uint32_t tlp_bytes = 0;  // size writes and read requests are re-emitted in; 0: unchanged
  double latency_ns = 0;   // extra latency on the P2P path
};

struct platform_spec {
  int max_gen = 5;             // fastest root-port link
  double rc_latency_ns = 100;  // root port ingress to memory controller or to another port
  bool reorders_relaxed_writes = false;  // may commit RO writes to host memory out of order
  forwarding_spec p2p;                   // between root ports (or host bridges) of one socket
  pcie::dllp_rates root_port_dllps;      // how its root ports acknowledge what they receive
  dma::memory_timing memory{90, 50, 64, 64};
  link::interconnect_spec interconnect;
  p2p_policy interconnect_p2p_write, interconnect_p2p_read;  // crossing the interconnect
};

// Device requests for a peer on another socket: the interconnect's policies, re-emitted and
// delayed as the root complex's own P2P path does.
inline forwarding_spec interconnect_forwarding(const platform_spec& p) {
  return {p.interconnect_p2p_write, p.interconnect_p2p_read, p.p2p.tlp_bytes, p.p2p.latency_ns};
}

inline const params::table<p2p_policy>& p2p_write_params() {
  static const params::table<p2p_policy> t{
      params::boolean("routed", &p2p_policy::routed,
                      "false: P2P writes get Unsupported Request (PCIe does not require root "
                      "complexes to route P2P)."),
      params::bandwidth("bandwidth", &p2p_policy::bandwidth_gbs,
                        "Forwarding throughput cap; 0 = none."),
  };
  return t;
}

inline const params::table<p2p_policy>& p2p_read_params() {
  static const params::table<p2p_policy> t{
      params::boolean("routed", &p2p_policy::routed, "false: P2P reads get Unsupported Request."),
      params::integer("outstanding", &p2p_policy::outstanding,
                      "P2P reads forwarded at once; 0 = no limit.")
          .between(0, 65535),
      params::bandwidth("bandwidth", &p2p_policy::bandwidth_gbs,
                        "Forwarding throughput cap; 0 = none."),
  };
  return t;
}

inline const params::table<dma::memory_timing>& host_memory_params() {
  using dma::memory_timing;
  static const params::table<memory_timing> t{
      params::time("latency", &memory_timing::latency_ns, "Host memory access."),
      params::bandwidth("bandwidth", &memory_timing::bandwidth_gbs, "Host memory data path."),
      params::size("completion_size", &memory_timing::cpl_bytes,
                   "Completion size for host memory reads; at most the requester's MPS.")
          .power_of_two(64, 4096),
  };
  return t;
}

// Keys under `root_complex.p2p`.
inline const params::table<forwarding_spec>& rc_p2p_params() {
  static const params::table<forwarding_spec> t = params::join<forwarding_spec>({
      {
          params::size("tlp_size", &forwarding_spec::tlp_bytes,
                       "Size P2P writes and read requests are re-emitted in (e.g. 64B on some "
                       "Intel root complexes); 0 = unchanged.")
              .power_of_two(64, 4096)
              .or_zero(),
          params::time("latency", &forwarding_spec::latency_ns, "Extra latency of P2P forwarding."),
      },
      params::within("write", &forwarding_spec::write, p2p_write_params()),
      params::within("read", &forwarding_spec::read, p2p_read_params()),
  });
  return t;
}

// Keys under `root_complex`, `memory` and `interconnect`, as a preset writes them.
inline const params::table<platform_spec>& platform_spec_params() {
  static const params::table<platform_spec> t = params::join<platform_spec>({
      {
          params::integer("max_gen", &platform_spec::max_gen, "Fastest root-port link.")
              .between(1, 5),
          params::time("root_complex.latency", &platform_spec::rc_latency_ns,
                       "Root port ingress to memory controller or to another root port."),
          params::boolean("root_complex.reorders_relaxed_writes",
                          &platform_spec::reorders_relaxed_writes,
                          "true: a write to host memory with Relaxed Ordering set may be "
                          "committed before the writes that came in before it (PCIe Base 2.4.1, "
                          "table 2-40 P-P b), explored by p2psim litmus; false: writes are "
                          "committed in the order they came in."),
      },
      params::within("root_complex", &platform_spec::root_port_dllps, pcie::dllp_rate_params()),
      params::within("root_complex.p2p", &platform_spec::p2p, rc_p2p_params()),
      params::within("memory", &platform_spec::memory, host_memory_params()),
      params::within("interconnect", &platform_spec::interconnect,
                     link::interconnect_spec_params()),
      params::within("interconnect.p2p.write", &platform_spec::interconnect_p2p_write,
                     p2p_write_params()),
      params::within("interconnect.p2p.read", &platform_spec::interconnect_p2p_read,
                     p2p_read_params()),
  });
  return t;
}

}  // namespace p2psim::root_complex
