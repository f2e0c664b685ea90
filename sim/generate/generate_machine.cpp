#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "sim/generate/machine.h"

namespace p2psim::generate {

size_t random_source::weighted(const std::vector<int>& weights) {
  uint64_t x = below(uint64_t(std::accumulate(weights.begin(), weights.end(), 0)));
  for (size_t i = 0; i < weights.size(); ++i) {
    if (x < uint64_t(weights[i])) return i;
    x -= uint64_t(weights[i]);
  }
  return weights.size() - 1;
}

std::string size_text(uint64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && bytes && bytes % 1024 == 0) bytes /= 1024, ++u;
  return fmt::format("{}{}", bytes, units[u]);
}

std::string time_text(uint64_t ps) {
  if (ps % 1000000 == 0) return fmt::format("{}us", ps / 1000000);
  if (ps % 1000 == 0) return fmt::format("{}ns", ps / 1000);
  return fmt::format("{}ps", ps);
}

namespace {

constexpr uint64_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024;

// The machine under construction, with the counters that name its parts.
class builder {
 public:
  builder(random_source& r, const std::vector<platform_facts>& platforms) : r(r) {
    m.platform = r.pick(platforms);
  }

  machine build() {
    pcie_defaults();
    int sockets = 1;
    bool multi = m.platform.interconnect_routes_write || m.platform.interconnect_routes_read;
    if (multi) sockets = int(r.weighted({50, 30, 10, 10})) + 1;
    for (int s = 0; s < sockets; ++s) add_socket(s);
    interconnects();
    // Root ports, each with a device or a switch tree below it; at least two devices.
    for (int s = 0; s < sockets; ++s) {
      int ports = int(r.between(1, 3));
      for (int p = 0; p < ports; ++p) subtree(s, int(r.below(m.sockets[s].host_bridges)), 1);
    }
    while (devices < 2) subtree(int(r.below(sockets)), 0, 1);
    return std::move(m);
  }

 private:
  void pcie_defaults() {
    m.mps = int(r.pick(std::vector<int>{128, 256, 256, 256, 512, 1024, 4096}));
    m.mrrs = int(r.pick(std::vector<int>{128, 256, 512, 512, 1024, 4096}));
    int rcb = r.chance(70) ? 64 : 128;
    int tags = r.pick(std::vector<int>{32, 256, 256, 768, 1024, int(r.between(1, 16))});
    m.pcie = fmt::format("{{mps: {}B, mrrs: {}B, rcb: {}B, tags: {}}}", m.mps, m.mrrs, rcb, tags);
    max_mps = m.mps;
  }

  void add_socket(int s) {
    node n;
    n.name = fmt::format("cpu{}", s);
    n.kind = node_kind::socket;
    n.socket = s;
    socket_choice sc;
    sc.host_bridges = int(r.weighted({70, 25, 5})) + 1;
    sc.memory = r.pick(std::vector<uint64_t>{4 * GiB, 16 * GiB, 64 * GiB});
    n.settings.push_back("memory: " + size_text(sc.memory));
    if (!m.platform.name.empty()) n.settings.push_back("platform: " + m.platform.name);
    if (sc.host_bridges > 1) n.settings.push_back(fmt::format("host_bridges: {}", sc.host_bridges));
    switch (r.weighted({55, 20, 25})) {
      case 0:
        break;
      case 1:
        sc.iommu = "{mode: passthrough}";
        break;
      default:
        sc.translating = true;
        sc.iommu = fmt::format(
            "{{mode: translating, page_size: {}, iotlb_entries: {}, miss_latency: {}}}",
            size_text(r.pick(std::vector<uint64_t>{4 * KiB, 4 * KiB, 64 * KiB, 2 * MiB})),
            r.pick(std::vector<int>{0, 4, 64, 64, 512}), time_text(r.between(50, 1000) * 1000));
    }
    if (!sc.iommu.empty()) n.settings.push_back("iommu: " + sc.iommu);
    m.nodes.push_back(n);
    m.sockets.push_back(sc);
  }

  void interconnects() {
    int n = int(m.sockets.size());
    for (int s = 1; s < n; ++s) m.interconnects.push_back({s - 1, s});
    if (n >= 3 && r.chance(50)) m.interconnects.push_back({n - 1, 0});  // a ring
    for (size_t i = 0; i < m.interconnects.size(); ++i) {
      std::string extra;
      if (r.chance(40))
        extra = fmt::format(", bandwidth: {}GB/s, latency: {}", r.between(4, 64),
                            time_text(r.between(20, 300) * 1000));
      m.interconnect_settings.push_back(extra);
    }
  }

  link_choice link_below(int parent, int host_bridge) {
    link_choice l;
    int top = 5;
    if (m.nodes[parent].kind == node_kind::socket) top = std::min(top, m.platform.max_gen);
    l.gen = int(r.between(1, uint64_t(top)));
    l.width = r.pick(std::vector<int>{1, 2, 4, 4, 8, 8, 8, 16, 16, 16, 16, 16, 12, 32});
    l.latency_ps = r.between(1, 40) * 1000;
    l.ecrc = r.chance(10);
    if (r.chance(50)) {
      l.ack_limit = int(r.between(100, 4000));
      l.fc_limit = int(r.between(100, 4000));
    }
    if (r.chance(25)) {
      // Small receiver buffers, which throttle TLPs; each still holds the largest TLP.
      int pd = int(r.between(uint64_t(max_mps / 16), uint64_t(max_mps / 4)));
      l.credits = fmt::format("{{ph: {}, pd: {}, nph: {}, cplh: {}, cpld: {}}}", r.between(1, 32),
                              pd, r.between(1, 16), r.between(1, 16), pd);
    }
    l.host_bridge = host_bridge;
    return l;
  }

  // A device, or a switch with 1..4 nodes below it (switches up to `level` 3).
  void subtree(int parent, int host_bridge, int level) {
    bool make_switch = level <= 3 && switches < 8 && r.chance(level == 1 ? 55 : 30);
    if (devices >= 10) make_switch = false;
    node n;
    n.parent = parent;
    n.socket = m.nodes[parent].socket;
    n.link = link_below(parent, m.nodes[parent].kind == node_kind::socket ? host_bridge : 0);
    if (make_switch) {
      n.kind = node_kind::pcie_switch;
      n.name = fmt::format("sw{}", switches++);
      n.settings.push_back("latency: " + time_text(r.between(20, 300) * 1000));
      if (r.chance(20)) n.settings.push_back("forwarding: store_and_forward");
      n.acs_redirect = r.chance(15);
      if (n.acs_redirect) n.settings.push_back("acs_redirect: true");
      int self = int(m.nodes.size());
      m.nodes.push_back(n);
      int children = int(r.between(1, 4));
      for (int c = 0; c < children && devices < 10; ++c) subtree(self, 0, level + 1);
      return;
    }
    device(n);
  }

  void device(node& n) {
    ++devices;
    n.kind = node_kind(int(node_kind::gpu) + int(r.weighted({50, 35, 15})));
    // MPS stays the topology's: a TLP larger than a receiver's MPS is malformed (PCIe Base
    // Spec 2.2.2), so software sets one MPS along every peer path.
    n.mps = m.mps;
    if (r.chance(15)) n.settings.push_back(fmt::format("tags: {}", r.between(1, 1024)));
    if (r.chance(10)) n.settings.push_back(fmt::format("mrrs: {}B", 128 << r.below(6)));
    switch (n.kind) {
      case node_kind::gpu: {
        n.name = fmt::format("gpu{}", gpus++);
        uint64_t bar1 = r.pick(std::vector<uint64_t>{64 * MiB, 256 * MiB, 256 * MiB, 32 * GiB});
        uint64_t reserved = r.pick(std::vector<uint64_t>{16 * MiB, 32 * MiB});
        uint64_t vram = r.pick(std::vector<uint64_t>{1 * GiB, 16 * GiB, 40 * GiB});
        n.settings.push_back("bar1: " + size_text(bar1));
        n.settings.push_back("bar1_reserved: " + size_text(reserved));
        n.settings.push_back("vram: " + size_text(vram));
        if (r.chance(50)) {
          n.settings.push_back("vram_latency: " + time_text(r.between(100, 800) * 1000));
          n.settings.push_back(fmt::format("vram_bandwidth: {}GB/s", r.between(100, 3000)));
        }
        if (r.chance(30))
          n.settings.push_back("rdma_writes_ordering: " +
                               r.pick(std::vector<std::string>{"none", "owner", "all_devices"}));
        n.target_bytes = std::min(bar1 - reserved, vram);
        n.local_bytes = vram;
        break;
      }
      case node_kind::dma_engine: {
        n.name = fmt::format("nic{}", engines++);
        uint64_t bar2 = r.pick(std::vector<uint64_t>{0, 0, 1 * MiB, 16 * MiB});
        uint64_t local = r.pick(std::vector<uint64_t>{16 * MiB, 64 * MiB, 1 * GiB});
        if (bar2) n.settings.push_back("bar2: " + size_text(bar2));
        n.settings.push_back("local_memory: " + size_text(local));
        if (r.chance(50))
          n.settings.push_back("descriptor_latency: " + time_text(r.between(5, 200) * 1000));
        n.target_bytes = bar2;
        n.local_bytes = local;
        break;
      }
      default: {
        n.name = fmt::format("ssd{}", ssds++);
        uint64_t capacity = r.pick(std::vector<uint64_t>{256 * MiB, 1 * GiB});
        n.settings.push_back("capacity: " + size_text(capacity));
        n.settings.push_back(fmt::format("queue_pairs: {}", r.between(1, 8)));
        n.settings.push_back(fmt::format("queue_depth: {}", r.between(2, 64)));
        n.settings.push_back("max_transfer: " + size_text(4 * KiB << r.below(6)));
        n.settings.push_back("read_latency: " + time_text(r.between(2, 80) * 1000000));
        n.settings.push_back("write_latency: " + time_text(r.between(2, 30) * 1000000));
        n.settings.push_back(fmt::format("read_bandwidth: {}GB/s", r.between(1, 14)));
        n.settings.push_back(fmt::format("write_bandwidth: {}GB/s", r.between(1, 12)));
        n.local_bytes = capacity;
        break;
      }
    }
    m.nodes.push_back(n);
  }

  random_source& r;
  machine m;
  int max_mps = 256;
  int switches = 0, devices = 0, gpus = 0, engines = 0, ssds = 0;
};

}  // namespace

machine generate_machine(random_source& r, const std::vector<platform_facts>& platforms) {
  return builder(r, platforms).build();
}

bool machine::routes(int a, int b, bool write) const {
  if (nodes[b].kind == node_kind::socket) return true;  // host memory is no peer
  auto up = [&](int i) {
    std::vector<int> chain;
    for (; i >= 0; i = nodes[i].parent) chain.push_back(i);
    return chain;
  };
  std::vector<int> ua = up(a), ub = up(b);
  int common = -1;
  for (int x : ua)
    if (std::find(ub.begin(), ub.end(), x) != ub.end()) {
      common = x;
      break;
    }
  bool rc = write ? platform.root_complex_routes_write : platform.root_complex_routes_read;
  if (common < 0)  // other sockets: the interconnect's policy, and each root complex's
    return rc && (write ? platform.interconnect_routes_write : platform.interconnect_routes_read);
  const node& c = nodes[common];
  if (c.kind == node_kind::pcie_switch && !c.acs_redirect && !sockets[c.socket].translating)
    return true;  // turns at the switch
  return rc;
}

std::string machine::topology_yaml(const std::string& name, uint64_t seed) const {
  std::string out = fmt::format(
      "# Generated by `p2psim generate --seed {}`: a random machine for differential and\n"
      "# invariant testing (docs/testing.md, \"Generated machines\").\n"
      "name: {}\n"
      "description: random machine, seed {}\n"
      "pcie: {}\n",
      seed, name, seed, pcie);
  auto entry = [](const std::string& head, const std::vector<std::string>& settings) {
    std::string s = "  - {" + head;
    for (const auto& kv : settings) s += ", " + kv;
    return s + "}\n";
  };
  out += "sockets:\n";
  for (const auto& n : nodes)
    if (n.kind == node_kind::socket) out += entry("name: " + n.name, n.settings);
  if (!interconnects.empty()) {
    out += "interconnects:\n";
    for (size_t i = 0; i < interconnects.size(); ++i)
      out += fmt::format("  - {{name: link{}, between: [{}, {}]{}}}\n", i,
                         nodes[interconnects[i].first].name, nodes[interconnects[i].second].name,
                         interconnect_settings[i]);
  }
  std::string switches, devices, links;
  static const char* types[] = {"", "", "gpu", "dma_engine", "nvme"};
  for (const auto& n : nodes) {
    if (n.kind == node_kind::socket) continue;
    if (n.kind == node_kind::pcie_switch)
      switches += entry("name: " + n.name, n.settings);
    else
      devices += entry(fmt::format("name: {}, type: {}", n.name, types[int(n.kind)]), n.settings);
    const link_choice& l = n.link;
    std::vector<std::string> ls = {fmt::format("gen: {}", l.gen), fmt::format("width: {}", l.width),
                                   "latency: " + time_text(l.latency_ps)};
    if (l.host_bridge) ls.push_back(fmt::format("host_bridge: {}", l.host_bridge));
    if (l.ecrc) ls.push_back("ecrc: true");
    if (l.ack_limit) ls.push_back(fmt::format("ack_limit: {}", l.ack_limit));
    if (l.fc_limit) ls.push_back(fmt::format("fc_limit: {}", l.fc_limit));
    if (!l.credits.empty()) ls.push_back("credits: " + l.credits);
    links += entry(fmt::format("up: {}, down: {}", nodes[n.parent].name, n.name), ls);
  }
  if (!switches.empty()) out += "switches:\n" + switches;
  out += "devices:\n" + devices;
  out += "links:\n" + links;
  return out;
}

}  // namespace p2psim::generate
