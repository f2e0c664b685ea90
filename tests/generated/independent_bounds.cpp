#include "tests/generated/independent_bounds.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace p2psim::oracle {
namespace {

// Values as docs/formats-topology.md ("Values and units") writes them. Only what topology and
// preset files hold is needed; anything else is an error, not a guess.
double number_with_unit(const std::string& text,
                        const std::vector<std::pair<std::string, double>>& units,
                        const char* what) {
  size_t end = 0;
  double v = std::stod(text, &end);
  std::string unit = text.substr(end);
  if (unit.empty() || text == "0") return v;  // a bare number: the base unit
  for (const auto& [u, scale] : units)
    if (unit == u) return v * scale;
  throw std::runtime_error(std::string("independent_bounds: unknown ") + what + " unit in '" +
                           text + "'");
}

uint64_t size_of(const YAML::Node& n) {
  return uint64_t(number_with_unit(n.as<std::string>(),
                                   {{"B", 1},
                                    {"KiB", 1024.0},
                                    {"MiB", 1024.0 * 1024},
                                    {"GiB", 1024.0 * 1024 * 1024},
                                    {"TiB", 1024.0 * 1024 * 1024 * 1024},
                                    {"kB", 1e3},
                                    {"MB", 1e6},
                                    {"GB", 1e9}},
                                   "size"));
}

double ns_of(const YAML::Node& n) {
  return number_with_unit(
      n.as<std::string>(),
      {{"ps", 1e-3}, {"ns", 1}, {"us", 1e3}, {"µs", 1e3}, {"ms", 1e6}, {"s", 1e9}}, "time");
}

double gbps_of(const YAML::Node& n) {
  return number_with_unit(n.as<std::string>(),
                          {{"GB/s", 1},
                           {"MB/s", 1e-3},
                           {"TB/s", 1e3},
                           {"Gb/s", 0.125},
                           {"Gbps", 0.125},
                           {"GiB/s", 1.073741824}},
                          "bandwidth");
}

// docs/design.md, "PCIe timing": raw GB/s per lane and direction, after line encoding.
double raw_lane_gbps(int gen) {
  switch (gen) {
    case 1:
      return 2.5 * 8 / 10 / 8;
    case 2:
      return 5.0 * 8 / 10 / 8;
    case 3:
      return 8.0 * 128 / 130 / 8;
    case 4:
      return 16.0 * 128 / 130 / 8;
    case 5:
      return 32.0 * 128 / 130 / 8;
  }
  throw std::runtime_error("independent_bounds: gen " + std::to_string(gen));
}

constexpr uint64_t tlp_min_overhead = 8 + 12;  // framing, sequence, LCRC + a 3DW header

}  // namespace

double link_limit_gbps(int gen, int width, int ack_limit, int fc_limit, uint64_t bytes,
                       uint64_t payload, uint64_t overhead) {
  const double skip_share = 4.0 / 1538;  // SKIP ordered sets
  double dllp_share = 0;
  if (ack_limit > 0) dllp_share += 8.0 / ack_limit;
  if (fc_limit > 0) dllp_share += 8.0 / fc_limit;
  const double raw = raw_lane_gbps(gen) * width;
  const double tlps = std::ceil(double(bytes) / double(payload));
  const double wire = double(bytes) + tlps * double(overhead);
  const double last = double(bytes) - (tlps - 1) * double(payload) + double(overhead);
  // DLLPs acknowledge and return credits for bytes already sent: those due for the last TLP's
  // bytes follow it, and the transfer has ended by then. Before it, they take their share.
  const double seconds_per_gb =
      (wire - last) / (raw * (1 - skip_share - dllp_share)) + last / (raw * (1 - skip_share));
  return double(bytes) / seconds_per_gb;
}

machine_view::machine_view(const std::string& topology_file, const std::string& platforms_dir) {
  YAML::Node t = YAML::LoadFile(topology_file);
  uint64_t mps = 256, mrrs = 512;
  if (t["pcie"] && t["pcie"]["mps"]) mps = size_of(t["pcie"]["mps"]);
  if (t["pcie"] && t["pcie"]["mrrs"]) mrrs = size_of(t["pcie"]["mrrs"]);
  int index = 0;
  for (const auto& s : t["sockets"]) {
    socket sk;
    auto apply = [&](const YAML::Node& p) {
      if (!p) return;
      if (auto rc = p["root_complex"]) {
        if (rc["latency"]) sk.p.rc_latency_ns = ns_of(rc["latency"]);
        if (auto p2p = rc["p2p"]) {
          if (p2p["tlp_size"]) sk.p.p2p_tlp_size = size_of(p2p["tlp_size"]);
          if (p2p["latency"]) sk.p.p2p_latency_ns = ns_of(p2p["latency"]);
          if (p2p["write"] && p2p["write"]["bandwidth"])
            sk.p.p2p_write_gbps = gbps_of(p2p["write"]["bandwidth"]);
          if (p2p["read"] && p2p["read"]["bandwidth"])
            sk.p.p2p_read_gbps = gbps_of(p2p["read"]["bandwidth"]);
        }
      }
      for (const char* key : {"memory", "memory_controller"})
        if (auto m = p[key]; m && m.IsMap()) {
          if (m["latency"]) sk.p.memory_latency_ns = ns_of(m["latency"]);
          if (m["bandwidth"]) sk.p.memory_gbps = gbps_of(m["bandwidth"]);
          if (m["completion_size"]) sk.p.completion_size = size_of(m["completion_size"]);
        }
      if (auto q = p["interconnect"]) {
        if (q["bandwidth"]) sk.p.interconnect_gbps = gbps_of(q["bandwidth"]);
        if (q["latency"]) sk.p.interconnect_latency_ns = ns_of(q["latency"]);
        if (auto p2p = q["p2p"]) {
          if (p2p["write"] && p2p["write"]["bandwidth"])
            sk.p.interconnect_p2p_write_gbps = gbps_of(p2p["write"]["bandwidth"]);
          if (p2p["read"] && p2p["read"]["bandwidth"])
            sk.p.interconnect_p2p_read_gbps = gbps_of(p2p["read"]["bandwidth"]);
        }
      }
    };
    if (s["platform"])
      apply(YAML::LoadFile(platforms_dir + "/" + s["platform"].as<std::string>() + ".yaml"));
    YAML::Node own;  // the socket's overrides use the preset's section names
    if (s["root_complex"]) own["root_complex"] = s["root_complex"];
    if (s["memory_controller"]) own["memory_controller"] = s["memory_controller"];
    if (s["interconnect"]) own["interconnect"] = s["interconnect"];
    apply(own);
    sk.translating =
        s["iommu"] && s["iommu"]["mode"] && s["iommu"]["mode"].as<std::string>() == "translating";
    m_sockets.push_back(sk);
    node n;
    n.name = s["name"].as<std::string>();
    n.kind = "socket";
    n.socket = index++;
    m_nodes[n.name] = n;
  }
  for (const auto& q : t["interconnects"]) {
    const socket& a = m_sockets[size_t(at(q["between"][0].as<std::string>()).socket)];
    m_interconnect_gbps.push_back(q["bandwidth"] ? gbps_of(q["bandwidth"]) : a.p.interconnect_gbps);
    m_interconnect_latency_ns.push_back(q["latency"] ? ns_of(q["latency"])
                                                     : a.p.interconnect_latency_ns);
    m_interconnect_ends.push_back({q["name"].as<std::string>(),
                                   at(q["between"][0].as<std::string>()).socket,
                                   at(q["between"][1].as<std::string>()).socket});
  }
  for (const auto& s : t["switches"]) {
    node n;
    n.name = s["name"].as<std::string>();
    n.kind = "switch";
    n.latency_ns = s["latency"] ? ns_of(s["latency"]) : 110;
    n.acs_redirect = s["acs_redirect"] && s["acs_redirect"].as<bool>();
    m_nodes[n.name] = n;
  }
  for (const auto& d : t["devices"]) {
    node n;
    n.name = d["name"].as<std::string>();
    n.kind = d["type"] ? d["type"].as<std::string>() : "gpu";
    n.mps = d["mps"] ? size_of(d["mps"]) : mps;
    n.mrrs = d["mrrs"] ? size_of(d["mrrs"]) : mrrs;
    if (n.kind == "gpu") n.latency_ns = d["vram_latency"] ? ns_of(d["vram_latency"]) : 300;
    m_nodes[n.name] = n;
  }
  for (const auto& l : t["links"]) {
    node& n = m_nodes.at(l["down"].as<std::string>());
    n.parent = l["up"].as<std::string>();
    if (l["gen"]) n.gen = l["gen"].as<int>();
    if (l["width"]) n.width = l["width"].as<int>();
    if (l["latency"]) n.link_latency_ns = ns_of(l["latency"]);
    if (l["ecrc"]) n.ecrc = l["ecrc"].as<bool>();
    if (l["ack_limit"]) n.ack_limit = l["ack_limit"].as<int>();
    if (l["fc_limit"]) n.fc_limit = l["fc_limit"].as<int>();
    if (auto c = l["credits"]) {
      if (c["ph"]) n.ph = c["ph"].as<uint64_t>();
      if (c["pd"]) n.pd = c["pd"].as<uint64_t>();
      if (c["nph"]) n.nph = c["nph"].as<uint64_t>();
      if (c["cplh"]) n.cplh = c["cplh"].as<uint64_t>();
      if (c["cpld"]) n.cpld = c["cpld"].as<uint64_t>();
    }
  }
  // Sockets of switches and devices, from the top down.
  for (auto& [name, n] : m_nodes)
    if (n.kind != "socket") n.socket = at(chain(name).back()).socket;
}

const machine_view::node& machine_view::at(const std::string& name) const {
  auto it = m_nodes.find(name);
  if (it == m_nodes.end()) throw std::runtime_error("independent_bounds: no node '" + name + "'");
  return it->second;
}

std::vector<std::string> machine_view::chain(const std::string& name) const {
  std::vector<std::string> c = {name};
  while (!at(c.back()).parent.empty()) c.push_back(at(c.back()).parent);
  return c;
}

path_bound machine_view::bound(const std::string& src, const std::string& dst, bool write,
                               uint64_t bytes, int streams) const {
  path_bound b;
  b.max_gbps = std::numeric_limits<double>::infinity();
  auto limit = [&](double gbps, const std::string& what) {
    if (gbps > 0 && gbps < b.max_gbps) b.max_gbps = gbps, b.bottleneck = what;
  };
  const std::vector<std::string> up = chain(src), down = chain(dst);
  const node& s = at(src);
  const node& d = at(dst);
  const socket& from = m_sockets[size_t(s.socket)];
  const bool memory = d.kind == "socket";
  std::string common;
  for (const auto& x : up)
    if (std::find(down.begin(), down.end(), x) != down.end()) {
      common = x;
      break;
    }
  const bool other_socket = common.empty();
  // Turning at a switch keeps a peer's TLPs off the root complex, unless ACS sends them up.
  const bool via_root = memory || other_socket || at(common).kind == "socket" ||
                        at(common).acs_redirect || from.translating;
  const bool p2p_via_root = via_root && !memory;

  // The largest payload a TLP carrying data can have on each side of the root complex.
  uint64_t near_payload, far_payload;
  if (write) {
    near_payload = s.mps;
    far_payload =
        p2p_via_root && from.p.p2p_tlp_size ? std::min(s.mps, from.p.p2p_tlp_size) : s.mps;
  } else {
    uint64_t completer =
        memory ? m_sockets[size_t(d.socket)].p.completion_size : std::max(d.mps, s.mps);
    near_payload = far_payload = completer;
  }

  // The credits of the link from `n` to its parent, in the class the data travels in: a
  // write's posted requests or a read's completions, which `receiver` takes (null: both ends
  // do, the data going up and coming back). In a credit loop at most `headers` TLPs start and
  // at most 16 B per data credit; the loop is no shorter than the way there and back and the
  // longer of the smallest TLP's symbols (the receiver has all of it) and a receiving switch's
  // latency (a cut-through switch passes a TLP on, and frees it, that long after its header
  // came in: docs/formats-topology.md, `forwarding`). Endpoints and root ports advertise infinite
  // completion credits (PCIe Base Spec 2.6.1).
  const uint64_t all_bytes = bytes * uint64_t(std::max(streams, 1));  // the streams share it
  // `requests`: a read's requests (MRRS bytes each at most), which travel the other way in
  // non-posted credits.
  auto limit_by_credits = [&](const node& n, uint64_t payload, uint64_t overhead,
                              const node* receiver, bool requests = false) {
    const node& p = at(n.parent);
    if (!write && !requests && receiver && receiver->kind != "switch") return;
    const uint64_t headers = write ? n.ph : requests ? n.nph : n.cplh;
    const uint64_t data = write ? n.pd : requests ? 0 : n.cpld;
    auto hold = [&](const node& end) { return end.kind == "switch" ? end.latency_ns : 0.0; };
    const double symbols_ns = double(overhead) / (raw_lane_gbps(n.gen) * n.width);
    const double loop_ns =
        2 * n.link_latency_ns +
        std::max(symbols_ns, receiver ? hold(*receiver) : std::min(hold(n), hold(p)));
    auto by = [&](uint64_t units, uint64_t in_flight, const char* key) {
      if (!in_flight) return;                                          // infinite
      const uint64_t loops = (units + in_flight - 1) / in_flight - 1;  // after the first window
      if (loops)
        limit(double(all_bytes) / (double(loops) * loop_ns),
              "credits of link " + n.name + " (" + key + " " + std::to_string(in_flight) + ")");
    };
    by((all_bytes + payload - 1) / payload, headers, write ? "ph" : requests ? "nph" : "cplh");
    by((all_bytes + 15) / 16, data, write ? "pd" : "cpld");
  };
  double each_way = 0, once = 0;  // a read's request and data both pay each_way
  // `data`: the path's data crosses these links (else only its requests do).
  // `toward`: which end of each link receives the data (1: the parent, 0: the node, -1:
  // both, as the data climbs and comes back down).
  auto walk = [&](const std::vector<std::string>& c, uint64_t payload, int toward,
                  bool data = true) {
    for (const auto& x : c) {
      if (x == common) break;
      const node& n = at(x);
      if (n.kind == "socket") break;
      uint64_t overhead = tlp_min_overhead + (n.ecrc ? 4 : 0);
      if (data) {
        limit(link_limit_gbps(n.gen, n.width, n.ack_limit, n.fc_limit, bytes, payload, overhead),
              "link " + x);
        limit_by_credits(n, payload, overhead, toward < 0 ? nullptr : toward ? &at(n.parent) : &n);
        if (!write)  // the requests go the other way
          limit_by_credits(n, s.mrrs, overhead,
                           toward < 0 ? nullptr
                           : toward   ? &n
                                      : &at(n.parent),
                           true);
      }
      b.links.push_back(x);
      double ns = n.link_latency_ns + (n.kind == "switch" ? n.latency_ns : 0);
      (data ? each_way : once) += ns;
    }
  };
  // A write's data climbs from the source and comes down to the target; a read's comes back.
  walk(up, near_payload, write);
  if (!memory) walk(down, far_payload, !write);
  if (!common.empty() && at(common).kind == "switch") {
    each_way += at(common).latency_ns;
    // Sent up by ACS (or for the IOMMU), a peer request climbs from the switch where the
    // paths meet to the root complex and comes back down the same links. Completions are
    // routed by ID and turn at the switch (P2P Request Redirect redirects requests only), so
    // a read's data does not climb.
    if (via_root) {
      std::vector<std::string> above = chain(common);
      const std::string meet = common;
      common.clear();
      walk(above, near_payload, -1, write);
      common = meet;
    }
  }

  const socket& to = m_sockets[size_t(d.socket)];
  // A root complex passes a request after its latency (a completion may go on at once).
  if (via_root) once += from.p.rc_latency_ns;
  if (p2p_via_root && !other_socket) {
    once += from.p.p2p_latency_ns;
    // A redirected read's completions do not pass the root complex (above).
    const bool redirected = at(common).kind == "switch";
    if (write || !redirected)
      limit(write ? from.p.p2p_write_gbps : from.p.p2p_read_gbps, "root complex P2P cap");
  }
  if (other_socket) {
    double fastest = 0, nearest = std::numeric_limits<double>::infinity();
    for (double g : m_interconnect_gbps) fastest = std::max(fastest, g);
    for (double l : m_interconnect_latency_ns) nearest = std::min(nearest, l);
    limit(fastest, "interconnect");
    each_way += nearest;
    for (const auto& q : m_interconnect_ends)
      if (q.a == s.socket || q.b == s.socket || q.a == d.socket || q.b == d.socket)
        b.interconnects.push_back(q.name);
    if (!memory)
      limit(write ? from.p.interconnect_p2p_write_gbps : from.p.interconnect_p2p_read_gbps,
            "interconnect P2P cap");
  }
  if (memory) limit(to.p.memory_gbps, "memory");
  // A read's request goes there and its data comes back, after the access.
  b.min_latency_ns = write ? each_way + once
                           : 2 * each_way + once + (memory ? to.p.memory_latency_ns : d.latency_ns);
  return b;
}

}  // namespace p2psim::oracle
