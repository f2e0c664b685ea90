// A PCIe switch: one upstream port (index 0) and N downstream ports. Requests are routed by
// address through the memory windows of what sits below each downstream port, completions
// by requester ID. Each ingress port buffers TLPs per flow-control class (its receive
// credits) until the egress link has taken them; egress queues apply the ordering rules.
// With ACS P2P Request Redirect, requests between downstream ports go up to the root complex;
// a switch above passes them on up (ACS Upstream Forwarding) rather than back down.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include <systemc>

#include "models/pcie/fifo.h"
#include "models/pcie/route_table.h"
#include "models/pcie/tlp.h"
#include "models/stats/stat.h"
#include "models/switch/switch_spec.h"
#include "models/transport/pcie_port.h"
#include "models/transport/stream_log.h"

namespace p2psim::pcie_switch {

// The declared settings and what elaboration decides.
struct switch_params : switch_spec {
  int downstream_ports = 2;
  uint16_t bdf = 0;  // ID of the upstream port, for the completions it originates
};

// Occupancy of one port's ingress buffer, in TLPs, per flow-control class.
struct ingress_occupancy {
  std::array<uint32_t, pcie::fc_class_count> now{}, max{};
};

struct switch_stats {
  uint64_t forwarded_tlps = 0;
  uint64_t acs_redirected_tlps = 0;   // ACS: peer requests sent up instead of across
  uint64_t unsupported_requests = 0;  // requests no port claims
  uint64_t unexpected_completions = 0;
  std::vector<ingress_occupancy> ingress;  // per port: up, down0, down1, ...
};

// The counters; `ingress` is reported per port as `ingress_max_tlps` (stats_dump).
inline const stats::table<switch_stats>& switch_stat_table() {
  using stats::unit;
  static const stats::table<switch_stats> t{
      stats::counter("forwarded_tlps", &switch_stats::forwarded_tlps, unit::tlps,
                     "TLPs forwarded from an ingress to an egress port."),
      stats::counter("acs_redirected_tlps", &switch_stats::acs_redirected_tlps, unit::tlps,
                     "Peer requests sent up to the root complex instead of across (ACS P2P "
                     "Request Redirect)."),
      stats::counter("unsupported_requests", &switch_stats::unsupported_requests, unit::tlps,
                     "Requests no port claims, or for a port whose link is down: answered with "
                     "Unsupported Request (non-posted) or dropped."),
      stats::counter("unexpected_completions", &switch_stats::unexpected_completions, unit::tlps,
                     "Completions for a requester ID no port claims: dropped."),
  };
  return t;
}

class pcie_switch : public sc_core::sc_module, public transport::tlp_handler {
 public:
  // `log` records the bytes of posted requests the switch refuses.
  pcie_switch(sc_core::sc_module_name name, const switch_params& p, transport::stream_log& log);
  transport::pcie_port& upstream() { return *m_ports[0]; }
  transport::pcie_port& downstream(int i) { return *m_ports[1 + i]; }
  // Routes for downstream port i (window and buses of everything below it). With a switch
  // below, the port has ACS Upstream Forwarding: what that switch redirects up goes on up.
  void set_route(int i, std::vector<pcie::window> mmio, uint8_t bus_lo, uint8_t bus_hi,
                 bool switch_below);
  const switch_params& params() const { return m_params; }
  const switch_stats& stats() const { return m_stats; }

  void receive(int port, tlm::tlm_generic_payload& gp) override;
  void sent(int port, tlm::tlm_generic_payload& gp, uint64_t after_ps) override;
  bool forwards_bursts() const override { return true; }
  bool allows_start_ahead() const override { return true; }
  bool promises_ready_no_sooner_than(int port, uint64_t t, transport::promise_scope) const override;

 private:
  int route(int in, tlm::tlm_generic_payload& gp);
  void count_departures(int in, int cls);
  // How long after its tail a TLP that took `ser_ps` to serialize may leave.
  uint64_t forwarding_wait(uint64_t ser_ps) const;

  // When TLPs told to leave ahead do leave, per ingress port and class, earliest first (an
  // egress sends in order, so a time nearly always goes at the back): the occupancy counts
  // them until then.
  using departures = pcie::fifo<uint64_t>;
  std::vector<std::array<departures, pcie::fc_class_count>> m_departures;

  switch_params m_params;
  std::vector<std::unique_ptr<transport::pcie_port>> m_ports;
  pcie::route_table m_routes;
  uint64_t m_latency_ps;
  switch_stats m_stats;
  transport::stream_log& m_log;
};

}  // namespace p2psim::pcie_switch
