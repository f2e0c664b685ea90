// How long a root complex is sure to hold a TLP that came in at a root port, by where it routes
// it (root_complex::least_hold_ps): what burst fidelity paces bursts into a root port by
// (docs/architecture.md, "Flow control").
#include <catch2/catch.hpp>

#include "models/link/pcie_link.h"
#include "models/pcie/address.h"
#include "models/pcie/order_policy.h"
#include "models/root_complex/root_complex.h"
#include "models/transport/stream_log.h"
#include "models/transport/tlp_txn.h"
#include "tests/models/sink_endpoint.h"

namespace {

using namespace p2psim;
constexpr uint64_t ns = 1000;  // ps

// Root ports 0 and 1 (a peer at 0x2000'0000, bus 2 below port 1) and one interconnect port
// (another socket's memory at 0x8'0000'0000, a peer at 0x3000'0000, bus 5): 150 ns through the
// root complex, 40 ns more on the P2P path, a 10 GB/s cap on P2P writes across sockets.
struct rig {
  transport::tlp_pool pool;
  transport::stream_log log;
  pcie::order_policy order;  // all rules, in order
  root_complex::root_complex rc;
  explicit rig(uint32_t p2p_tlp_bytes = 0) : rc("rc", params(p2p_tlp_bytes), pool, log, order) {
    rc.set_root_port_route(1, {{0x2000'0000, 1 << 20}}, 2, 2);
    rc.add_interconnect_route(0, {0x8'0000'0000, 1 << 20}, {{0x3000'0000, 1 << 20}}, 5, 5);
  }
  static root_complex::rc_params params(uint32_t p2p_tlp_bytes = 0) {
    root_complex::rc_params p;
    p.platform.p2p.tlp_bytes = p2p_tlp_bytes;
    p.platform.rc_latency_ns = 150;
    p.platform.p2p.latency_ns = 40;
    p.platform.interconnect_p2p_write.bandwidth_gbs = 10;
    p.memory = {0x1'0000'0000, 1 << 20};
    p.root_ports = 2;
    p.interconnect_ports = 1;
    return p;
  }
  // A TLP from the device with requester ID `rid`, 256 B (a write) or a read of 256 B.
  uint64_t hold(int port, pcie::tlp_type type, uint64_t address, uint16_t rid = 0x0100) {
    pcie::tlp_header h;
    h.type = type;
    h.address = address;
    h.length = 256;
    h.requester_id = rid;
    tlm::tlm_generic_payload& gp = pool.make(h, 0);
    const uint64_t ps = rc.least_hold_ps(port, gp);
    gp.release();
    return ps;
  }
};

}  // namespace

TEST_CASE("root complex hold: host memory frees at once, a peer write after forwarding",
          "[root_complex][burst]") {
  rig r;
  // Host memory: a write is free once the data path has it, a read at once (nothing known).
  CHECK(r.hold(0, pcie::tlp_type::mwr, 0x1'0000'0000) == 0);
  CHECK(r.hold(0, pcie::tlp_type::mrd, 0x1'0000'0000) == 0);
  // A peer below root port 1: the write leaves 150 + 40 ns later at the soonest.
  CHECK(r.hold(0, pcie::tlp_type::mwr, 0x2000'0000) == 190 * ns);
  // A read passed on as it is (this platform does not proxy them) too.
  CHECK(r.hold(0, pcie::tlp_type::mrd, 0x2000'0000) == 190 * ns);
  // Across the interconnect: the same latency, and 256 B through the 10 GB/s cap (25.6 ns).
  CHECK(r.hold(0, pcie::tlp_type::mwr, 0x3000'0000) == 190 * ns + 25'600);
  // Another socket's memory goes on at once; an address nobody claims is refused at once.
  CHECK(r.hold(0, pcie::tlp_type::mwr, 0x8'0000'0000) == 0);
  CHECK(r.hold(0, pcie::tlp_type::mwr, 0x9'0000'0000) == 0);
  // What came from the interconnect is not a root port's to pace.
  CHECK(r.hold(2, pcie::tlp_type::mwr, 0x2000'0000) == 0);
}

TEST_CASE("root complex hold: a completion for another root port waits for the root complex",
          "[root_complex][burst]") {
  rig r;
  CHECK(r.hold(0, pcie::tlp_type::cpld, 0, pcie::make_bdf(2, 0, 0)) == 150 * ns);
  CHECK(r.hold(0, pcie::tlp_type::cpld, 0, pcie::make_bdf(5, 0, 0)) == 150 * ns);
  // One for the root complex's own proxied read, or for no one, is freed at once.
  CHECK(r.hold(0, pcie::tlp_type::cpld, 0, rig::params().bdf) == 0);
  CHECK(r.hold(0, pcie::tlp_type::cpld, 0, pcie::make_bdf(9, 0, 0)) == 0);
}

TEST_CASE("root complex hold: behind a translating IOMMU a request goes where it is mapped",
          "[root_complex][burst]") {
  rig r;
  iommu::iommu_params walks;
  walks.mode = iommu::iommu_mode::translating;
  walks.iotlb_entries = 0;  // every request walks
  walks.miss_latency_ns = 900;
  iommu::iommu_domain& d = r.rc.add_iommu_domain(0x0100, walks);
  const uint64_t to_peer = *d.map(0x2000'0000, 1 << 16);
  const uint64_t to_memory = *d.map(0x1'0000'0000, 1 << 16);
  const uint64_t read_only = *d.map(0x2001'0000, 1 << 16, true, false);
  CHECK(r.hold(0, pcie::tlp_type::mwr, to_peer) == (900 + 190) * ns);
  CHECK(r.hold(0, pcie::tlp_type::mwr, to_memory) == 900 * ns);
  // A request that faults (unmapped, or without the permission) walks, then is refused.
  CHECK(r.hold(0, pcie::tlp_type::mwr, to_peer + (1 << 20)) == 900 * ns);
  CHECK(r.hold(0, pcie::tlp_type::mwr, read_only) == 900 * ns);
  CHECK(r.hold(0, pcie::tlp_type::mrd, read_only) == (900 + 190) * ns);
  // Looking up where a request goes counts no translation and fills no IOTLB.
  CHECK(d.stats().translations == 0);
  // With an IOTLB a request may hit: no walk is sure.
  iommu::iommu_params cached = walks;
  cached.iotlb_entries = 64;
  iommu::iommu_domain& c = r.rc.add_iommu_domain(0x0200, cached);
  CHECK(r.hold(0, pcie::tlp_type::mwr, *c.map(0x2000'0000, 1 << 16), 0x0200) == 190 * ns);
  // Passthrough: routed on the address as it is.
  iommu::iommu_params identity;
  identity.mode = iommu::iommu_mode::passthrough;
  r.rc.add_iommu_domain(0x0300, identity);
  CHECK(r.hold(0, pcie::tlp_type::mwr, 0x2000'0000, 0x0300) == 190 * ns);
}

TEST_CASE("root complex hold: a write re-emitted in pieces waits for them on the way out",
          "[root_complex][burst]") {
  // The root complex re-emits peer writes as 64 B TLPs: a 256 B write's buffer is free once
  // its fourth piece leaves, three pieces' time on root port 1's link after the first.
  rig r(64);
  pcie::order_policy order;
  test::sink_endpoint peer("peer");
  link::pcie_link wire("wire", link::pcie_link_params{}, order);
  wire.connect(r.rc.root_port(1), peer.port);
  pcie::tlp_header piece;
  piece.type = pcie::tlp_type::mwr;
  piece.address = 0x2000'0000;
  piece.length = 64;
  const uint64_t each = wire.downstream().serialization_ps(piece);
  REQUIRE(each > 0);
  CHECK(r.hold(0, pcie::tlp_type::mwr, 0x2000'0000) == 190 * ns + 3 * each);
  // A root complex that re-emits proxies reads: a read's buffer is free once its pieces are
  // issued, nothing known.
  CHECK(r.hold(0, pcie::tlp_type::mrd, 0x2000'0000) == 0);
}
