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
  const std::vector<port_route>& routes() const { return m_routes; }

 private:
  std::vector<port_route> m_routes;  // a handful of ports: a linear scan beats a map
};

}  // namespace p2psim::pcie
