#include "sim/core/burst_warnings.h"

#include <fmt/format.h>

#include <algorithm>

#include "models/dma/dma_requester.h"
#include "sim/core/system.h"
#include "sim/topology/topology.h"

namespace p2psim::core {
namespace {

// TLP by TLP, a receiver that advertises fewer credits than a class had in flight over its
// credit loop holds the sender back; bursts are paced by the credits over the shortest loop
// the link allows (models/pcie/credit_window.h), not over the one the receiver makes by
// holding TLPs longer (models/pcie/credit_demand.h).
std::string credit_shortfall(const link::link_channel& c) {
  const pcie::credit_limits& l = c.receiver_credits();
  struct cls_keys {
    pcie::fc_class cls;
    const char *header_key, *data_key;
    uint32_t header, data;
  };
  const cls_keys classes[] = {{pcie::fc_class::posted, "ph", "pd", l.ph, l.pd},
                              {pcie::fc_class::non_posted, "nph", "npd", l.nph, l.npd},
                              {pcie::fc_class::completion, "cplh", "cpld", l.cplh, l.cpld}};
  std::string why;
  uint64_t loop_ps = 0;
  auto check = [&](const char* key, uint32_t have, uint32_t need) {
    if (!have || have >= need) return false;
    why += fmt::format("{}{} {} (needs {})", why.empty() ? "" : ", ", key, have, need);
    return true;
  };
  for (const auto& k : classes) {
    const pcie::credit_demand* d = c.credit_demand(k.cls);
    if (!d) return "";
    const bool short_h = check(k.header_key, k.header, d->most().header);
    const bool short_d = check(k.data_key, k.data, d->most().data);
    if (short_h || short_d) loop_ps = std::max(loop_ps, d->longest_loop_ps());
  }
  if (why.empty()) return "";
  return fmt::format(
      "the receiver advertises {} credits, fewer than were in flight over a credit loop of "
      "{:.0f} ns in this run: TLP by TLP the sender waits for credits here for as long as "
      "the receiver holds each TLP, while bursts are held back only for the shortest loop "
      "the link allows (docs/architecture.md, \"Flow control\"): study this link with "
      "--fidelity tlp",
      why, loop_ps / 1000.0);
}

// What one direction of a link or socket interconnect (`what`: "link NAME") says.
void channel_warnings(std::vector<std::string>& out, const std::string& what,
                      const link::link_channel& channel, const std::string& receiver) {
  auto say = [&](const std::string& why) {
    out.push_back(fmt::format("{}: toward {}: {}", what, receiver, why));
  };
  if (auto w = credit_shortfall(channel); !w.empty()) say(w);
  if (uint64_t n = channel.held_behind_bursts())
    say(fmt::format(
        "{} times a transmission waited for a whole burst of another "
        "stream (or another class of its own) at least four times its size, or one that held "
        "the wire four times as long as its symbols take while its TLPs came in, where TLP by "
        "TLP it would have waited for one TLP: the transfers that waited may look slower "
        "here, and those they waited for faster, whatever their sizes (docs/architecture.md, "
        "\"Burst fidelity\", a burst is one unit in every queue): study it with --fidelity tlp",
        n));
  if (uint64_t n = channel.held_behind_ran_ahead_bursts())
    say(fmt::format(
        "{} times a transmission waited for a burst of another stream (or "
        "another class of its own) that had started on a link before without credits for all "
        "of its TLPs: TLP by TLP its TLPs would have come in as the receiver freed room, "
        "further apart, and the transmission gone between them; the transfers that waited may "
        "look slower here (docs/architecture.md, \"Burst fidelity\", flow control): study it "
        "with --fidelity tlp",
        n));
}

}  // namespace

std::vector<std::string> burst_warnings(const fabric_system& sys, const topo::topology& t,
                                        const nlohmann::json& stats) {
  std::vector<std::string> out;
  for (const auto& l : sys.links()) {
    const topo::link_params* spec = nullptr;
    for (const auto& x : t.links)
      if (x.down == l.name) spec = &x;
    if (!spec) continue;
    channel_warnings(out, "link " + l.name, l.link->downstream(), spec->down);
    channel_warnings(out, "link " + l.name, l.link->upstream(), spec->up);
  }
  // A socket interconnect queues and forwards bursts as a link does (a read-request burst
  // trickling in from a slow root port holds it while a write waits: generated seed 1095).
  for (const auto& q : sys.interconnects())
    for (const auto& x : t.interconnects)
      if (x.name == q.name) {
        channel_warnings(out, "interconnect " + q.name, q.link->a_to_b(), x.b);
        channel_warnings(out, "interconnect " + q.name, q.link->b_to_a(), x.a);
      }
  // What a root complex did to peer traffic shows on the root-port links of its socket,
  // which carry that traffic: the warning names each of them.
  auto on_root_ports = [&](const std::string& socket, const std::string& why) {
    for (const auto& x : t.links)
      if (x.up == socket) out.push_back(fmt::format("link {}: toward {}: {}", x.down, socket, why));
  };
  // A root complex's P2P bandwidth cap passes a burst on once all of it is through, where TLP
  // by TLP each piece goes on as it is.
  for (const auto& sock : t.sockets)
    if (const auto* rc = sys.find_socket(sock.name); rc && rc->capped_bursts())
      on_root_ports(sock.name,
                    fmt::format("{} bursts passed a peer-to-peer bandwidth cap of {}'s root "
                                "complex whole, where TLP by TLP each piece goes on as it is "
                                "through: peer traffic through it may look slower (docs/"
                                "architecture.md, \"Burst fidelity\"): study it with "
                                "--fidelity tlp",
                                rc->capped_bursts(), sock.name));
  // A root complex proxies P2P reads in the order they came, and a read burst came whole with
  // its first request: a read of another stream queued behind it waits for all of it.
  for (const auto& sock : t.sockets)
    if (const auto* rc = sys.find_socket(sock.name); rc && rc->reads_held_behind_bursts())
      on_root_ports(sock.name,
                    fmt::format("{} times a peer-to-peer read queued in {}'s root complex "
                                "behind a read burst of another stream at least four times its "
                                "size, where TLP by TLP it would have waited for the requests "
                                "of it that had come in first: a small read beside a large one "
                                "may look slower (docs/architecture.md, \"Burst fidelity\", a "
                                "burst is one unit in every queue): study it with --fidelity tlp",
                                rc->reads_held_behind_bursts(), sock.name));
  // Short jobs of one requester that ended while its other jobs still took turns with them:
  // TLP by TLP the job that started first keeps the lead its first turns gave it, which the
  // bursts' turns do not keep exactly.
  if (stats.contains("devices"))
    for (const auto& [name, d] : stats["devices"].items()) {
      if (!d.contains("requester")) continue;
      const uint64_t n = d["requester"].value("short_jobs_ended_in_turns", uint64_t(0));
      if (!n) continue;
      out.push_back(fmt::format(
          "link {0}: {1} of {0}'s jobs ended while its other jobs still took turns with them, "
          "fewer than {2} of its TLPs after their own first: TLP by TLP the job that started "
          "first keeps the lead its first turns gave it, which bursts' turns keep only to "
          "within 2 TLPs, so such a job may end up to 2 TLPs' time sooner or later, more than "
          "1% of a job this short (docs/architecture.md, \"Burst fidelity\", ramps): study it "
          "with --fidelity tlp",
          name, n, dma::short_turns_tlps));
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
