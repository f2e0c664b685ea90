// The rules of models/transport/lookahead.h, each on its own: a link starts a TLP ahead, at a
// time still to come, when its sender promises that nothing it still hands over is ready
// sooner (promises_ready_no_sooner_than). A root complex's promise must allow for everything
// that could reach a root port's egress: a device's TLP after its latency, a completion from
// the interconnect at once. The link checks every promise: a TLP handed over ready before a
// time promised is a model error, not a silent reordering.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "models/link/pcie_link.h"
#include "models/root_complex/root_complex.h"
#include "models/switch/pcie_switch.h"
#include "models/transport/stream_log.h"
#include "models/transport/tlp_txn.h"

namespace {

using namespace p2psim;
constexpr uint64_t ns = 1000;  // ps

// A component with one port that takes in whatever arrives and answers nothing.
struct endpoint : sc_core::sc_module, transport::tlp_handler {
  transport::pcie_port port;
  bool ahead, promise;
  endpoint(sc_core::sc_module_name n, bool allows_ahead = false, bool promises = false)
      : sc_module(n), port("port", *this, 0), ahead(allows_ahead), promise(promises) {}
  void receive(int, tlm::tlm_generic_payload& gp) override {
    port.free_buffer(gp);
    gp.release();
  }
  void sent(int, tlm::tlm_generic_payload&, uint64_t) override {}
  bool allows_start_ahead() const override { return ahead; }
  bool promises_ready_no_sooner_than(int, uint64_t, transport::promise_scope) const override {
    return promise;
  }
};

tlm::tlm_generic_payload& tlp(transport::tlp_pool& pool, pcie::tlp_type type, uint32_t length,
                              uint16_t requester_id) {
  pcie::tlp_header h;
  h.type = type;
  h.address = 0x1000;
  h.length = length;
  h.requester_id = requester_id;
  h.byte_count = length;
  return pool.make(h, 0);
}

// A root complex (latency 150 ns) with a device on its root port (a 5 ns link) and another
// socket across the interconnect (50 ns), which promises about its completions as told.
struct socket_rig {
  transport::tlp_pool pool;  // first: destroyed after every module that may hold a TLP
  pcie::order_policy order;  // all rules, in order
  transport::stream_log log;
  root_complex::root_complex rc;
  endpoint device, remote;
  link::pcie_link device_link;
  link::interconnect_link upi;
  explicit socket_rig(bool remote_promises)
      : rc("rc", params(), pool, log, order),
        device("device"),
        remote("remote", true, remote_promises),
        device_link("device_link", link::pcie_link_params{}, order),
        upi("upi", link::interconnect_link_params{{20, 50}, 16}, order) {
    device_link.connect(rc.root_port(0), device.port);
    upi.connect(rc.interconnect_port(0), remote.port);
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
  }
  static root_complex::rc_params params() {
    root_complex::rc_params p;
    p.platform.rc_latency_ns = 150;
    p.memory = {0x1'0000'0000, 1 << 20};
    p.interconnect_ports = 1;
    return p;
  }
  bool promises(uint64_t t) const {
    return rc.promises_ready_no_sooner_than(0, t, transport::promise_scope::all);
  }
};

// A cut-through switch (latency 110 ns) between a host above and a device below (5 ns links).
struct switch_rig {
  transport::tlp_pool pool;
  pcie::order_policy order;
  transport::stream_log log;
  pcie_switch::pcie_switch sw;
  endpoint host, device;
  link::pcie_link up, down;
  switch_rig()
      : sw("sw", pcie_switch::switch_params{{110, true, false, 0}, 1, 0}, log),
        host("host"),
        device("device"),
        up("up", link::pcie_link_params{}, order),
        down("down", link::pcie_link_params{}, order) {
    up.connect(host.port, sw.upstream());
    down.connect(sw.downstream(0), device.port);
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
  }
  bool promises(int port, uint64_t t) const {
    return sw.promises_ready_no_sooner_than(port, t, transport::promise_scope::all);
  }
};

// Runs the simulation until `t` (ps), from time 0.
void run_until(uint64_t t) {
  sc_core::sc_start(sc_core::sc_time(double(t), sc_core::SC_PS));
}

}  // namespace

TEST_CASE("a switch promises nothing sooner than a TLP on the wire can leave", "[lookahead]") {
  switch_rig rig;
  CHECK(rig.promises(0, 110 * ns));  // nothing on any wire: anything is 110 ns away at least
  CHECK_FALSE(rig.promises(0, 110 * ns + 1));
  // A write from the device leaves 110 ns after its header came in (cut-through).
  rig.device.port.send(tlp(rig.pool, pcie::tlp_type::mwr, 256, 0x0100));
  const auto on_wire = rig.sw.downstream(0).arriving().front();
  const uint64_t leaves = on_wire.at_ps - on_wire.ser_ps + 110 * ns;
  run_until(on_wire.at_ps - 1);
  CHECK(rig.promises(0, leaves));
  CHECK_FALSE(rig.promises(0, leaves + 1));
  sc_core::sc_start();
}

TEST_CASE("a switch promises nothing past a request it may refuse at once", "[lookahead]") {
  switch_rig rig;
  // A read from above for an address no port claims: the switch answers UR as it comes in.
  rig.host.port.send(tlp(rig.pool, pcie::tlp_type::mrd, 64, 0x0000));
  const auto on_wire = rig.sw.upstream().arriving().front();
  const uint64_t arrives = on_wire.at_ps;
  run_until(arrives - 1);
  CHECK(rig.promises(0, arrives));
  CHECK_FALSE(rig.promises(0, arrives + 1));
  // Toward the device it could only be forwarded: its latency after its header came in.
  CHECK(rig.promises(1, arrives - on_wire.ser_ps + 110 * ns));
  CHECK_FALSE(rig.promises(1, arrives - on_wire.ser_ps + 110 * ns + 1));
  sc_core::sc_start();
  CHECK(rig.sw.stats().unsupported_requests == 1);
}

TEST_CASE("a root complex promises a root port nothing sooner than the interconnect could bring",
          "[lookahead]") {
  socket_rig rig(false);
  // A completion from the other socket goes to a device at once: one not yet on the
  // interconnect arrives 50 ns from now at the soonest, and the other socket promises
  // nothing about its completions.
  CHECK(rig.promises(50 * ns));
  CHECK_FALSE(rig.promises(50 * ns + 1));
  // Toward the interconnect: completions only, never requests (another socket's memory is
  // reached at once).
  CHECK(rig.rc.promises_ready_no_sooner_than(1, 100 * ns, transport::promise_scope::completions));
  CHECK_FALSE(rig.rc.promises_ready_no_sooner_than(1, 100 * ns, transport::promise_scope::all));
}

TEST_CASE("a root complex promises nothing sooner than a device's TLP could be ready",
          "[lookahead]") {
  socket_rig rig(true);
  // Nothing on any wire: a device's TLP arrives 5 ns from now at the soonest and waits the
  // root complex's 150 ns; what comes from the interconnect is later still.
  CHECK(rig.promises(155 * ns));
  CHECK_FALSE(rig.promises(155 * ns + 1));
  // A write on the device's link: ready 150 ns after it arrives, then.
  rig.device.port.send(tlp(rig.pool, pcie::tlp_type::mwr, 256, 0x0100));
  const uint64_t arrives = rig.rc.root_port(0).arriving().front().at_ps;
  run_until(arrives - 1);  // still on the wire
  CHECK(rig.promises(arrives + 150 * ns));
  CHECK_FALSE(rig.promises(arrives + 150 * ns + 1));
  sc_core::sc_start();
}

TEST_CASE("a root complex promises nothing past a completion on the interconnect", "[lookahead]") {
  socket_rig rig(true);
  // A completion for a device (bus 1) from the other socket: it goes on as it arrives.
  rig.remote.port.send(tlp(rig.pool, pcie::tlp_type::cpld, 64, 0x0100));
  const uint64_t arrives = rig.rc.interconnect_port(0).arriving().front().at_ps;
  REQUIRE(arrives < 150 * ns);
  CHECK(rig.promises(arrives));
  CHECK_FALSE(rig.promises(arrives + 1));
  sc_core::sc_start();
}

TEST_CASE("a root complex promises nothing sooner than a TLP held for a page walk is ready",
          "[lookahead]") {
  socket_rig rig(true);
  iommu::iommu_params translating;
  translating.mode = iommu::iommu_mode::translating;
  translating.miss_latency_ns = 300;
  rig.rc.add_iommu_domain(0x0100, translating);
  // An unmapped write walks the tables (300 ns) before it is refused: held until then.
  rig.device.port.send(tlp(rig.pool, pcie::tlp_type::mwr, 256, 0x0100));
  const uint64_t arrives = rig.rc.root_port(0).arriving().front().at_ps;
  const uint64_t walked = arrives + 300 * ns;
  run_until(walked - 2 * ns);
  REQUIRE(rig.rc.root_port(0).arriving().empty());  // in, and held
  CHECK(rig.promises(walked + 150 * ns));
  CHECK_FALSE(rig.promises(walked + 150 * ns + 1));
  sc_core::sc_start();
  CHECK(rig.rc.iommu().walk_wait_ps() == 300 * ns);
}

TEST_CASE("a link refuses a TLP its sender promised would not come", "[lookahead]") {
  transport::tlp_pool pool;  // outlives the link, which keeps the refused TLP
  endpoint sender("sender", true, true), receiver("receiver");
  pcie::order_policy order;
  link::pcie_link l("l", link::pcie_link_params{}, order);
  l.connect(sender.port, receiver.port);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  // Ready only in 100 ns, on an idle link: it is scheduled to start then, on the promise.
  sender.port.send(tlp(pool, pcie::tlp_type::mwr, 256, 0x0200),
                   sc_core::sc_time(100, sc_core::SC_NS));
  REQUIRE(receiver.port.arriving().size() == 1);
  // One ready sooner breaks it.
  CHECK_THROWS_AS(sender.port.send(tlp(pool, pcie::tlp_type::mwr, 256, 0x0200)), std::logic_error);
}

TEST_CASE("a link counts a TLP started ahead when its start comes", "[lookahead]") {
  transport::tlp_pool pool;  // outlives the link and the ports holding its TLPs
  endpoint sender("sender", true, true), receiver("receiver");
  pcie::order_policy order;
  link::pcie_link l("l", link::pcie_link_params{}, order);
  l.connect(sender.port, receiver.port);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  sender.port.send(tlp(pool, pcie::tlp_type::mwr, 256, 0x0200),
                   sc_core::sc_time(100, sc_core::SC_NS));
  REQUIRE(receiver.port.arriving().size() == 1);  // started ahead: on the wire
  CHECK(l.downstream().stats().tlps == 0);
  CHECK(l.downstream().stats().busy_ps == 0);
  run_until(100 * ns - 1);
  CHECK(l.downstream().stats().tlps == 0);
  sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_PS));  // its start
  const link::channel_stats s = l.downstream().stats();
  CHECK(s.tlps == 1);
  CHECK(s.payload_bytes == 256);
  CHECK(s.busy_ps > 0);
  sc_core::sc_start();
  CHECK(l.downstream().stats().tlps == 1);
}

TEST_CASE("a link that goes down before a TLP started ahead starts counts it dropped",
          "[lookahead]") {
  transport::tlp_pool pool;  // outlives the link and the ports holding its TLPs
  endpoint sender("sender", true, true), receiver("receiver");
  pcie::order_policy order;
  transport::stream_log log;
  link::pcie_link l("l", link::pcie_link_params{}, order);
  l.connect(sender.port, receiver.port);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  sender.port.send(tlp(pool, pcie::tlp_type::mwr, 256, 0x0200),
                   sc_core::sc_time(100, sc_core::SC_NS));
  REQUIRE(receiver.port.arriving().size() == 1);
  run_until(50 * ns);
  l.go_down(log);
  sc_core::sc_start();
  const link::channel_stats s = l.downstream().stats();
  CHECK(s.tlps == 0);
  CHECK(s.wire_bytes == 0);
  CHECK(s.busy_ps == 0);
  CHECK(s.dropped_tlps == 1);
  CHECK(s.dropped_bytes == 256);
}
