// Bridge routing: requests by address window, completions by bus range (route_table.h; the
// memory base/limit and secondary/subordinate bus registers of a PCI-to-PCI bridge).
#include <catch2/catch.hpp>

#include "models/pcie/route_table.h"

using namespace p2psim::pcie;

namespace {

route_table two_ports() {
  route_table t;
  port_route p1;
  p1.port = 1;
  p1.mmio = {{0x9000'0000, 0x1000'0000}, {0x40'0000'0000, 0x10'0000'0000}};  // 256 MiB, 64 GiB
  p1.bus_lo = 2;
  p1.bus_hi = 4;
  t.add(p1);
  port_route p3;
  p3.port = 3;
  p3.mmio = {{0xA000'0000, 0x0100'0000}};
  p3.bus_lo = 5;
  p3.bus_hi = 5;
  t.add(p3);
  return t;
}

}  // namespace

TEST_CASE("route table: requests go to the window that claims the address", "[pcie][route]") {
  const route_table t = two_ports();
  CHECK(t.by_address(0x9000'0000) == 1);
  CHECK(t.by_address(0x9FFF'FFFF) == 1);  // last byte of the window
  CHECK(t.by_address(0x40'0000'0000) == 1);
  CHECK(t.by_address(0x4F'FFFF'FFFF) == 1);
  CHECK(t.by_address(0xA000'0000) == 3);
  CHECK(t.by_address(0xA0FF'FFFF) == 3);
  // Unclaimed: below, between and above the windows.
  CHECK(t.by_address(0x8FFF'FFFF) == -1);
  CHECK(t.by_address(0xA100'0000) == -1);
  CHECK(t.by_address(0x50'0000'0000) == -1);
  CHECK(t.by_address(0) == -1);
  CHECK(t.by_address(~0ull) == -1);
}

TEST_CASE("route table: completions go to the port behind which the bus lies", "[pcie][route]") {
  const route_table t = two_ports();
  CHECK(t.by_bus(2) == 1);
  CHECK(t.by_bus(3) == 1);
  CHECK(t.by_bus(4) == 1);
  CHECK(t.by_bus(5) == 3);
  CHECK(t.by_bus(0) == -1);
  CHECK(t.by_bus(1) == -1);
  CHECK(t.by_bus(6) == -1);
  CHECK(t.by_bus(255) == -1);
}

TEST_CASE("route table: empty windows and bus ranges claim nothing", "[pcie][route]") {
  route_table t;
  CHECK(t.by_address(0x1000) == -1);
  CHECK(t.by_bus(1) == -1);
  port_route none;  // defaults: no window, bus range 1..0 (empty)
  none.port = 7;
  none.mmio = {{0x1000, 0}};  // size 0: absent
  t.add(none);
  CHECK(t.routes().size() == 1);
  CHECK(t.by_address(0x1000) == -1);
  CHECK(t.by_bus(0) == -1);
  CHECK(t.by_bus(1) == -1);
  // A window that ends at the top of the address space.
  port_route top;
  top.port = 2;
  top.mmio = {{0xFFFF'FFFF'FFFF'0000ull, 0x1'0000}};
  t.add(top);
  CHECK(t.by_address(~0ull) == 2);
  CHECK(t.by_address(0xFFFF'FFFF'FFFE'FFFFull) == -1);
}

TEST_CASE("route table: a switch routes requests across, up, or refuses them", "[pcie][route]") {
  route_table t = two_ports();  // port 1: a switch below (Upstream Forwarding); 3: an endpoint
  port_route p1 = t.routes()[0], p3 = t.routes()[1];
  p1.upstream_forwarding = true;
  route_table s;
  s.add(p1);
  s.add(p3);
  auto egress = [&](int in, uint64_t a, bool redirect) {
    request_egress e = s.route_request(in, a, redirect);
    return std::pair{e.port, e.redirected};
  };
  for (bool redirect : {false, true}) {
    // From above: only what a downstream port claims.
    CHECK(egress(0, 0x9000'0000, redirect) == std::pair{1, false});
    CHECK(egress(0, 0xA000'0000, redirect) == std::pair{3, false});
    CHECK(egress(0, 0x8000'0000, redirect) == std::pair{-1, false});
    // From below, for nothing below the switch: up.
    CHECK(egress(1, 0x8000'0000, redirect) == std::pair{0, false});
    CHECK(egress(3, 0x8000'0000, redirect) == std::pair{0, false});
    // Back down the port it came in at: a request a switch below redirected goes on up (ACS
    // Upstream Forwarding); an endpoint addressing its own window is refused.
    CHECK(egress(1, 0x9000'0000, redirect) == std::pair{0, false});
    CHECK(egress(3, 0xA000'0000, redirect) == std::pair{-1, false});
  }
  // Peer to peer: across, or up to the root complex with ACS P2P Request Redirect.
  CHECK(egress(1, 0xA000'0000, false) == std::pair{3, false});
  CHECK(egress(3, 0x9000'0000, false) == std::pair{1, false});
  CHECK(egress(1, 0xA000'0000, true) == std::pair{0, true});
  CHECK(egress(3, 0x9000'0000, true) == std::pair{0, true});
}
