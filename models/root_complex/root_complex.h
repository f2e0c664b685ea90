// A CPU socket's root complex: root ports, the host memory controller behind them, the ports
// to the socket interconnect (QPI/UPI), and the platform's peer-to-peer forwarding between
// root ports and across the interconnect (p2p_forwarder). What devices send through a root
// port passes the socket's IOMMU first (iommu_stage): one domain per device below it.
//
// Ports: root ports first (0..R-1), then one port per interconnect link.
#pragma once

#include <unordered_map>

#include <memory>
#include <vector>

#include <systemc>

#include "models/dma/memory_completer.h"
#include "models/memory/backing_store.h"
#include "models/pcie/route_table.h"
#include "models/root_complex/cpu_cache.h"
#include "models/root_complex/iommu_stage.h"
#include "models/root_complex/p2p_forwarder.h"
#include "models/root_complex/write_commit_stage.h"
#include "models/stats/stat.h"
#include "models/transport/pcie_port.h"
#include "models/transport/stream_log.h"

namespace p2psim::root_complex {

struct rc_params {
  uint16_t bdf = 0;        // the root complex's own requester / completer ID
  pcie::window memory;     // local DRAM in the physical address map
  platform_spec platform;  // latency, memory timing, P2P forwarding of the CPU family
  int root_ports = 1;
  int interconnect_ports = 0;
};

struct rc_stats {
  uint64_t memory_writes = 0, memory_reads = 0;
  uint64_t p2p_requests = 0, interconnect_p2p_requests = 0, interconnect_requests = 0;
  uint64_t unsupported_requests = 0, unexpected_completions = 0;
  uint64_t iommu_faults = 0;  // device requests the IOMMU blocked (DMA remapping faults)
};

// The counters; the IOMMU's mode and walk wait are reported beside them (stats_dump).
inline const stats::table<rc_stats>& rc_stat_table() {
  using stats::unit;
  static const stats::table<rc_stats> t{
      stats::counter("iommu_faults", &rc_stats::iommu_faults, unit::tlps,
                     "Device requests the IOMMU blocked (DMA remapping faults)."),
      stats::counter("memory_writes", &rc_stats::memory_writes, unit::tlps,
                     "Writes to this socket's memory."),
      stats::counter("memory_reads", &rc_stats::memory_reads, unit::tlps,
                     "Read requests to this socket's memory."),
      stats::counter("p2p_requests", &rc_stats::p2p_requests, unit::tlps,
                     "Peer requests forwarded between root ports of this socket."),
      stats::counter("interconnect_p2p_requests", &rc_stats::interconnect_p2p_requests, unit::tlps,
                     "Peer requests sent over the socket interconnect."),
      stats::counter("interconnect_requests", &rc_stats::interconnect_requests, unit::tlps,
                     "Requests sent over the socket interconnect, peer or host memory."),
      stats::counter("unsupported_requests", &rc_stats::unsupported_requests, unit::tlps,
                     "Requests answered with Unsupported Request or dropped (unrouted P2P, no "
                     "target, link down)."),
      stats::counter("unexpected_completions", &rc_stats::unexpected_completions, unit::tlps,
                     "Completions for no outstanding request: dropped."),
  };
  return t;
}

class root_complex : public sc_core::sc_module,
                     public transport::tlp_handler,
                     private forward_ports {
 public:
  // `pool`: the simulation's, which the TLPs it forwards in pieces or proxies come from;
  // `order`: the fabric's ordering table and choice source (write_commit_stage).
  root_complex(sc_core::sc_module_name name, const rc_params& p, transport::tlp_pool& pool,
               transport::stream_log& log, const pcie::order_policy& order);
  transport::pcie_port& root_port(int i) { return *m_ports[i]; }
  transport::pcie_port& interconnect_port(int i) { return *m_ports[m_params.root_ports + i]; }
  // What is behind root port i.
  void set_root_port_route(int i, std::vector<pcie::window> mmio, uint8_t bus_lo, uint8_t bus_hi);
  // What another socket reachable through interconnect port i holds: its host memory, its
  // devices' BARs (peers: the cross-socket P2P policy applies) and its bus numbers.
  void add_interconnect_route(int i, pcie::window memory, std::vector<pcie::window> mmio,
                              uint8_t bus_lo, uint8_t bus_hi);
  // The IOMMU domain of the device with this requester ID (none: its requests go untranslated).
  iommu::iommu_domain& add_iommu_domain(uint16_t requester_id, const iommu::iommu_params& p) {
    return m_iommu.add_domain(requester_id, p);
  }
  iommu::iommu_domain* iommu_domain_for(uint16_t requester_id) {
    return m_iommu.domain(requester_id);
  }
  const iommu_stage& iommu() const { return m_iommu; }
  // The MPS of the device with this requester ID: host memory answers its reads in pieces no
  // larger (the platform's completion size may be larger than a machine's MPS).
  void set_requester_mps(uint16_t requester_id, uint32_t mps) {
    m_requester_mps[requester_id] = mps;
  }
  memory::backing_store& memory() { return m_memory; }
  // What CPUs hold cached of this socket's memory (snooped writes drop it).
  ::p2psim::root_complex::cpu_cache& cpu_cache() { return m_cpu_cache; }
  const rc_params& params() const { return m_params; }
  const rc_stats& stats() const { return m_stats; }
  // Burst fidelity: bursts that passed a P2P bandwidth cap whole (p2p_forwarder).
  uint64_t capped_bursts() const {
    return m_p2p.capped_bursts() + m_interconnect_p2p.capped_bursts();
  }
  // Burst fidelity: P2P reads queued behind a read burst of another stream (p2p_forwarder).
  uint64_t reads_held_behind_bursts() const {
    return m_p2p.reads_held_behind_bursts() + m_interconnect_p2p.reads_held_behind_bursts();
  }

  void receive(int port, tlm::tlm_generic_payload& gp) override;
  void sent(int port, tlm::tlm_generic_payload& gp, uint64_t after_ps) override;
  bool forwards_bursts() const override { return true; }
  bool allows_start_ahead() const override { return true; }
  uint64_t least_hold_ps(int port, const tlm::tlm_generic_payload& gp) const override;
  bool promises_ready_no_sooner_than(int port, uint64_t t,
                                     transport::promise_scope which) const override;

 private:
  // forward_ports
  void send(int port, tlm::tlm_generic_payload& gp, uint64_t delay_ps) override;
  void free_buffer(int port, tlm::tlm_generic_payload& gp) override;
  uint16_t own_id() const override { return m_params.bdf; }
  void refused(tlm::tlm_generic_payload& gp, int in) override;
  uint64_t first_tlp_left_ps(const tlm::tlm_generic_payload& orig,
                             const tlm::tlm_generic_payload& pieces) const;

  bool is_root_port(int port) const { return port < m_params.root_ports; }
  void dispatch(int in, tlm::tlm_generic_payload& gp, bool blocked);
  void request(int in, tlm::tlm_generic_payload& gp);
  void to_memory(int in, tlm::tlm_generic_payload& gp);  // a request committed to host memory
  uint64_t forwarding_hold_ps(int in, const pcie::tlp_header& h, uint64_t address,
                              uint32_t tlps) const;
  void completion(int in, tlm::tlm_generic_payload& gp);

  rc_params m_params;
  transport::stream_log& m_log;
  std::vector<std::unique_ptr<transport::pcie_port>> m_ports;
  pcie::route_table m_root_routes, m_remote_routes, m_remote_memory;
  memory::backing_store m_memory;
  ::p2psim::root_complex::cpu_cache m_cpu_cache;
  dma::memory_completer m_memory_port;
  std::unordered_map<uint16_t, uint32_t> m_requester_mps;  // by requester ID
  uint32_t requester_mps(uint16_t id) const {              // 0: not known
    auto it = m_requester_mps.find(id);
    return it == m_requester_mps.end() ? 0 : it->second;
  }
  p2p_forwarder m_p2p, m_interconnect_p2p;  // between root ports; onto the interconnect
  iommu_stage m_iommu;
  write_commit_stage m_write_commit;  // requests for host memory go through it
  uint64_t m_latency_ps;
  rc_stats m_stats;
};

}  // namespace p2psim::root_complex
