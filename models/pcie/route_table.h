// Routing in a PCIe bridge (switch or root complex): requests go by address to the
// downstream port whose memory window contains it, completions go by requester ID to the
// downstream port whose bus range contains the requester's bus. Anything else goes upstream
// (or, at the top of the tree, is refused). Pure logic.
#pragma once

#include <cstdint>
#include <vector>

#include "models/pcie/window.h"

namespace p2psim::pcie {

struct port_route {
  int port = 0;
  std::vector<window> mmio;        // address windows behind the port
  uint8_t bus_lo = 1, bus_hi = 0;  // bus range behind it (empty when lo > hi)
  // ACS Upstream Forwarding (PCIe Base Spec 6.12, ACS Control): a request that came up
  // through this port and whose address routing targets the same port goes on upstream. Only
  // a request a switch below redirected (ACS P2P Request Redirect) does that, so it is set on
  // ports with a switch below; behind an endpoint such a request addresses the endpoint's
  // own window, and is refused.
  bool upstream_forwarding = false;
};

// Where a switch sends a request: `port` (0: upstream) or -1 to refuse it; `redirected` when
// ACS P2P Request Redirect sent a peer request up instead of across.
struct request_egress {
  int port = -1;
  bool redirected = false;
};

class route_table {
 public:
  void add(port_route r) { m_routes.push_back(std::move(r)); }
  // The port whose windows contain `address`, or -1.
  int by_address(uint64_t address) const {
    for (const auto& r : m_routes)
      for (const auto& w : r.mmio)
        if (w.contains(address)) return r.port;
    return -1;
  }
  // The port whose bus range contains `bus`, or -1.
  int by_bus(uint8_t bus) const {
    for (const auto& r : m_routes)
      if (bus >= r.bus_lo && bus <= r.bus_hi) return r.port;
    return -1;
  }
  // A switch's egress for a request that came in at port `in` (0: its upstream port, whose
  // requests go only to what a downstream port claims). From below: across to the port that
  // claims the address, up when none does, or up with `acs_redirect` (P2P Request Redirect:
  // peer requests go through the root complex). One whose address is behind the port it came
  // in at goes up where that port has Upstream Forwarding, else it is refused.
  request_egress route_request(int in, uint64_t address, bool acs_redirect) const {
    const int out = by_address(address);
    if (in == 0) return {out, false};
    if (out < 0) return {0, false};
    if (out == in) return {upstream_forwarding(in) ? 0 : -1, false};
    if (acs_redirect) return {0, true};
    return {out, false};
  }
  bool upstream_forwarding(int port) const {
    for (const auto& r : m_routes)
      if (r.port == port) return r.upstream_forwarding;
    return false;
  }
  const std::vector<port_route>& routes() const { return m_routes; }

 private:
  std::vector<port_route> m_routes;  // a handful of ports: a linear scan beats a map
};

}  // namespace p2psim::pcie
