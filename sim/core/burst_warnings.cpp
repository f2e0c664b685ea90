#include "sim/core/burst_warnings.h"

#include <fmt/format.h>

#include <cmath>

#include "models/pcie/time_units.h"
#include "sim/core/system.h"
#include "sim/topology/topology.h"

namespace p2psim::core {
namespace {

// How long a receiver holds a TLP before it can free the buffer: a switch its latency, a root
// port its root complex's (and, behind a translating IOMMU, a page walk, which holds the
// buffer), an endpoint nothing (its data path drains at once, or is the limit).
uint64_t receiver_latency_ps(const topo::topology& t, const std::string& node) {
  if (const auto* s = t.find_switch(node)) return pcie::ns_to_ps(s->latency_ns);
  if (const auto* s = t.find_socket(node)) {
    double ns = s->platform.rc_latency_ns;
    if (s->iommu.mode == iommu::iommu_mode::translating) ns += s->iommu.miss_latency_ns;
    return pcie::ns_to_ps(ns);
  }
  return 0;
}

// Credits flow control needs to keep one direction of a link busy with bulk traffic: its
// credit loop (a TLP's serialization, the way there, the receiver's hold, the UpdateFC's way
// back) at line rate, in TLPs of `bulk_payload` bytes. TLP by TLP, a receiver that advertises
// fewer holds the sender back; a burst starts while less than a burst is owed beyond them
// (double buffering), so it is not held back alike.
std::string credit_shortfall(const link::link_channel& c, uint64_t hold_ps, uint32_t bulk_payload) {
  if (c.stats().tlps == 0) return "";
  const double ps_per_byte = c.timing().ps_per_byte;
  const double tlp_ps = double(bulk_payload + 24) * ps_per_byte;
  const double loop_ps = tlp_ps + 2.0 * double(c.timing().latency_ps) + double(hold_ps);
  // Whole TLPs: a TLP goes only when the receiver has room for all of it.
  const auto headers = uint32_t(std::ceil(loop_ps / tlp_ps));
  const auto data = headers * ((bulk_payload + 15) / 16);
  const pcie::credit_limits& l = c.receiver_credits();
  std::string why;
  auto check = [&](const char* key, uint32_t have, uint32_t need) {
    if (have && have < need)
      why += fmt::format("{}{} {} (needs {})", why.empty() ? "" : ", ", key, have, need);
  };
  check("ph", l.ph, headers);
  check("pd", l.pd, data);
  check("nph", l.nph, headers);
  check("cplh", l.cplh, headers);
  check("cpld", l.cpld, data);
  if (why.empty()) return "";
  return fmt::format(
      "the receiver advertises {} credits, fewer than a credit loop of {:.0f} ns carries at "
      "{:.2f} GB/s in {} B TLPs: TLP by TLP the sender waits for credits here, while bursts "
      "are double-buffered and do not (docs/architecture.md, \"Burst fidelity\"): study this "
      "link with --fidelity tlp",
      why, loop_ps / 1000, 1000.0 / ps_per_byte, bulk_payload);
}

}  // namespace

std::vector<std::string> burst_warnings(const fabric_system& sys, const topo::topology& t,
                                        const nlohmann::json& stats) {
  std::vector<std::string> out;
  uint32_t bulk = 0;  // the largest TLP payload the machine's devices send
  for (const auto& d : t.devices) bulk = std::max(bulk, d.control.mps);
  for (const auto& l : sys.links()) {
    const topo::link_params* spec = nullptr;
    for (const auto& x : t.links)
      if (x.down == l.name) spec = &x;
    if (!spec) continue;
    for (const auto& [channel, receiver] :
         {std::pair{&l.link->downstream(), spec->down}, std::pair{&l.link->upstream(), spec->up}}) {
      if (auto w = credit_shortfall(*channel, receiver_latency_ps(t, receiver), bulk); !w.empty())
        out.push_back(fmt::format("link {}: toward {}: {}", l.name, receiver, w));
      if (uint64_t n = channel->held_behind_bursts())
        out.push_back(fmt::format(
            "link {}: toward {}: {} times a transmission waited for a whole burst of another "
            "stream at least four times its size, where TLP by TLP it would have waited for "
            "one TLP: a small transfer beside a large one may look slower (docs/"
            "architecture.md, \"Burst fidelity\", a burst is one unit in every queue): study "
            "it with --fidelity tlp",
            l.name, receiver, n));
    }
  }
  // A root complex's P2P bandwidth cap passes a burst on once all of it is through, where TLP
  // by TLP each piece goes on as it is: the root-port links of that socket carry them.
  for (const auto& sock : t.sockets) {
    const auto* rc = sys.find_socket(sock.name);
    if (!rc || rc->capped_bursts() == 0) continue;
    for (const auto& x : t.links)
      if (x.up == sock.name)
        out.push_back(fmt::format(
            "link {}: toward {}: {} bursts passed a peer-to-peer bandwidth cap of {}'s root "
            "complex whole, where TLP by TLP each piece goes on as it is through: peer traffic "
            "through it may look slower (docs/architecture.md, \"Burst fidelity\"): study "
            "it with --fidelity tlp",
            x.down, sock.name, rc->capped_bursts(), sock.name));
  }
  // Reads limited by their tags (fewer bytes in flight than a round trip carries at the
  // link's rate): a read burst takes its requests' tags and frees them when, on average, they
  // would have come back, which is not when each would.
  if (stats.contains("devices"))
    for (const auto& [name, d] : stats["devices"].items()) {
      const auto* dev = t.find_device(name);
      if (!dev || !d.contains("requester")) continue;
      const uint64_t rtt = d["requester"].value("min_read_round_trip_ps", uint64_t(0));
      const link::pcie_link* link = nullptr;
      for (const auto& l : sys.links())
        if (l.name == name) link = l.link;
      if (!rtt || !link) continue;
      const double round_trip_bytes = double(rtt) / link->downstream().timing().ps_per_byte;
      const double in_flight = double(dev->control.tags) * dev->control.mrrs;
      if (in_flight >= round_trip_bytes) continue;
      out.push_back(fmt::format(
          "link {}: reads by {} are limited by its tags: {} tags of {} B requests hold {:.0f} B "
          "in flight, less than the {:.0f} B a round trip of {:.0f} ns carries at {:.2f} GB/s; "
          "a read burst frees its tags when, on average, its requests' would be free "
          "(docs/architecture.md, \"Burst fidelity\"): study it with --fidelity tlp",
          name, name, dev->control.tags, dev->control.mrrs, in_flight, round_trip_bytes,
          rtt / 1000.0, 1000.0 / link->downstream().timing().ps_per_byte));
    }
  return out;
}

}  // namespace p2psim::core
