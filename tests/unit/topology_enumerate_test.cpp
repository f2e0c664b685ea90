// PCI enumeration: bus numbers, BAR placement, bridge windows.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "models/gpu/gpu_spec.h"
#include "sim/topology/address_map.h"
#include "sim/topology/topology_loader.h"

using namespace p2psim;
using namespace p2psim::topo;
using Catch::Matchers::Contains;

namespace {

const std::string k_dir = std::string(P2PSIM_SOURCE_DIR) + "/tests/data/topologies/";

topology load(const std::string& name) {
  return load_topology(k_dir + name, {{k_dir + "platforms"}, {}});
}

topology parse(const std::string& text) {
  config::document d = config::document::parse(text, k_dir + "good/inline.yaml");
  return load_topology(d, {{k_dir + "platforms"}, {}});
}

std::vector<addr_range> bars(const device_addresses& a) {
  std::vector<addr_range> out;
  for (const auto& r : {a.bar0, a.bar("bar1"), a.bar("bar2")})
    if (r.size) out.push_back(r);
  return out;
}

bool contains(const addr_range& outer, const addr_range& inner) {
  return inner.base >= outer.base && inner.end() <= outer.end();
}

// Every BAR and bus below the port above `node`, checking windows on the way.
void check_port(const topology& t, const address_map& m, const std::string& node,
                std::vector<addr_range>& all_bars, std::vector<uint8_t>& all_buses) {
  INFO("port above " << node);
  const port_window& w = m.ports.at(node);
  std::vector<addr_range> below_bars;
  std::vector<uint8_t> below_buses{w.buses.secondary};
  if (const device_params* d = t.find_device(node)) {
    const device_addresses& a = m.devices.at(d->name);
    CHECK(bus_of(a.bdf) == w.buses.secondary);
    CHECK((a.bdf & 0xff) == 0);  // device 0 function 0
    below_bars = bars(a);
  } else {
    const uint8_t internal = m.switch_bus.at(node);
    below_buses.push_back(internal);
    std::vector<std::string> children;
    for (const auto* l : t.links_below(node)) {
      check_port(t, m, l->down, below_bars, below_buses);
      children.push_back(l->down);
    }
    for (size_t i = 0; i < children.size(); ++i)
      for (size_t j = 0; j < i; ++j) {
        const port_window &a = m.ports.at(children[i]), &b = m.ports.at(children[j]);
        CHECK_FALSE(a.mmio.overlaps(b.mmio));
        CHECK((a.buses.subordinate < b.buses.secondary || b.buses.subordinate < a.buses.secondary));
      }
  }
  for (const auto& b : below_bars) CHECK(contains(w.mmio, b));
  for (uint8_t bus : below_buses) CHECK(w.buses.contains(bus));
  // The window is the smallest range covering the BARs.
  uint64_t lo = ~0ull, hi = 0;
  for (const auto& b : below_bars) lo = std::min(lo, b.base), hi = std::max(hi, b.end());
  CHECK(w.mmio.base == lo);
  CHECK(w.mmio.end() == hi);
  all_bars.insert(all_bars.end(), below_bars.begin(), below_bars.end());
  all_buses.insert(all_buses.end(), below_buses.begin(), below_buses.end());
}

void check_map(const topology& t, const address_map& m) {
  std::vector<addr_range> all;
  for (const auto& s : t.sockets) {
    std::vector<addr_range> socket_bars;
    std::vector<uint8_t> buses;
    for (const auto* l : t.links_below(s.name)) check_port(t, m, l->down, socket_bars, buses);
    const socket_addresses& sa = m.sockets.at(s.name);
    for (const auto& b : socket_bars) CHECK(contains(sa.mmio, b));
    for (uint8_t bus : buses) CHECK(sa.buses.contains(bus));
    all.insert(all.end(), socket_bars.begin(), socket_bars.end());
    all.push_back(sa.memory);
  }
  for (const auto& [name, a] : m.devices)
    for (const auto& b : bars(a)) CHECK(b.base % b.size == 0);  // naturally aligned
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t j = 0; j < i; ++j) CHECK_FALSE(all[i].overlaps(all[j]));
  // Root ports of all sockets are address siblings.
  std::vector<std::string> roots;
  for (const auto& l : t.links)
    if (t.find_socket(l.up)) roots.push_back(l.down);
  for (size_t i = 0; i < roots.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      CHECK_FALSE(m.ports.at(roots[i]).mmio.overlaps(m.ports.at(roots[j]).mmio));
  for (const auto& n : t.devices) CHECK(m.socket_of.count(n.name));
  for (const auto& n : t.switches) CHECK(m.socket_of.count(n.name));
}

}  // namespace

TEST_CASE("topology enumerate: bus numbers follow a depth-first walk", "[topology][enumerate]") {
  topology t = load("good/all_paths.yaml");
  address_map m = enumerate(t);
  check_map(t, m);
  CHECK(m.sockets.at("cpu0").rc_bdf == make_bdf(0, 0, 0));
  CHECK(m.sockets.at("cpu0").root_buses == std::vector<uint8_t>{0, 11});
  CHECK(m.ports.at("sw0").buses.secondary == 1);
  CHECK(m.ports.at("sw0").buses.subordinate == 9);
  CHECK(m.switch_bus.at("sw0") == 2);
  CHECK(m.ports.at("sw1").buses.secondary == 3);
  CHECK(m.ports.at("sw1").buses.subordinate == 6);
  CHECK(m.switch_bus.at("sw1") == 4);
  CHECK(m.devices.at("gpu0").bdf == make_bdf(5, 0, 0));
  CHECK(m.devices.at("nic0").bdf == make_bdf(6, 0, 0));
  CHECK(m.switch_bus.at("sw2") == 8);
  CHECK(m.devices.at("gpu1").bdf == make_bdf(9, 0, 0));
  CHECK(m.devices.at("gpu2").bdf == make_bdf(10, 0, 0));
  CHECK(m.devices.at("gpu3").bdf == make_bdf(12, 0, 0));
  CHECK(m.sockets.at("cpu0").buses.secondary == 0);
  CHECK(m.sockets.at("cpu0").buses.subordinate == 12);
  CHECK(m.sockets.at("cpu1").rc_bdf == make_bdf(13, 0, 0));
  CHECK(m.devices.at("gpu4").bdf == make_bdf(14, 0, 0));
  CHECK(m.socket_of.at("gpu4") == "cpu1");
  CHECK(m.socket_of.at("sw2") == "cpu0");
}

TEST_CASE("topology enumerate: memory and apertures", "[topology][enumerate]") {
  topology t = load("good/all_paths.yaml");
  address_map m = enumerate(t);
  CHECK(m.sockets.at("cpu0").memory.base == 0);
  CHECK(m.sockets.at("cpu0").memory.size == 64ull << 30);
  CHECK(m.sockets.at("cpu1").memory.base == 64ull << 30);
  CHECK(m.sockets.at("cpu0").mmio.base == mmio_base);
  CHECK(m.sockets.at("cpu1").mmio.base == mmio_base + mmio_aperture_bytes);
  // DFS order, largest BAR first: gpu0's BAR1 opens cpu0's aperture.
  CHECK(m.devices.at("gpu0").bar("bar1").base == mmio_base);
  CHECK(m.devices.at("gpu0").bar0.base == mmio_base + (256ull << 20));
  CHECK(m.devices.at("gpu4").bar("bar1").base == mmio_base + mmio_aperture_bytes);
  CHECK(m.devices.at("nic0").bar("bar2").size == 64ull << 20);
  CHECK(m.devices.at("nic0").bar("bar1").size == 0);
}

TEST_CASE("topology enumerate: every good fixture has consistent windows",
          "[topology][enumerate]") {
  for (const char* f : {"good/switch_only.yaml", "good/single_rc.yaml", "good/two_sockets.yaml",
                        "good/two_host_bridges.yaml", "good/cascaded.yaml", "good/full.yaml"}) {
    INFO(f);
    topology t = load(f);
    check_map(t, enumerate(t));
  }
}

TEST_CASE("topology enumerate: explicit addresses are honoured", "[topology][enumerate]") {
  topology t = load("good/full.yaml");
  address_map m = enumerate(t);
  check_map(t, m);
  CHECK(m.devices.at("gpu0").bar("bar1").base == 0x400040000000ull);
  CHECK(m.devices.at("gpu0").bar0.base == 0x400080000000ull);
  CHECK(m.ports.at("sw0").mmio.base == 0x400040000000ull);
  CHECK(m.ports.at("sw0").mmio.end() == 0x400082000000ull);
  // nic0's BAR2 lies past cpu1's default aperture, which grows to cover it.
  CHECK(m.devices.at("nic0").bar("bar2").base == 0x480000000000ull);
  CHECK(m.sockets.at("cpu1").mmio.base == mmio_base + mmio_aperture_bytes);
  CHECK(m.sockets.at("cpu1").mmio.end() == 0x480004000000ull);
}

TEST_CASE("topology enumerate: allocation steps around explicit BARs", "[topology][enumerate]") {
  topology t = parse(
      "sockets: [{name: cpu0, platform: tiny_gen4}]\n"
      "devices:\n"
      "  - {name: gpu0, bar1_address: 0x4000_0000_0000}\n"
      "  - {name: gpu1}\n"
      "links: [{up: cpu0, down: gpu0, gen: 4}, {up: cpu0, down: gpu1, gen: 4}]\n");
  address_map m = enumerate(t);
  check_map(t, m);
  CHECK(m.devices.at("gpu0").bar("bar1").base == mmio_base);
  CHECK(m.devices.at("gpu0").bar0.base == mmio_base + (256ull << 20));
  CHECK(m.devices.at("gpu1").bar("bar1").base == mmio_base + (512ull << 20));
}

TEST_CASE("topology enumerate: resource exhaustion is an error", "[topology][enumerate]") {
  CHECK_THROWS_WITH(parse("sockets: [{name: cpu0, platform: tiny_gen4}]\n"
                          "devices: [{name: gpu0, bar1: 8TiB}]\n"
                          "links: [{up: cpu0, down: gpu0}]\n"),
                    Contains("inline.yaml:2:11: error: the MMIO aperture of socket cpu0 (4TiB "
                             "from 0x4000_0000_0000) is full: no room for BAR1 of gpu0 (8TiB)"));
  CHECK_THROWS_WITH(parse("sockets: [{name: cpu0, memory: 63TiB}, {name: cpu1, memory: 2TiB}]\n"
                          "interconnects: [{name: q, between: [cpu0, cpu1]}]\n"),
                    Contains("inline.yaml:1:61: error: memory: host memory of all sockets must "
                             "fit below the MMIO apertures at 0x4000_0000_0000; cpu1 does not"));
  // 16 host bridges x 17 root ports need more than 256 buses.
  topology t;
  t.sockets.push_back({});
  t.sockets[0].name = "cpu0";
  t.sockets[0].host_bridges = 16;
  for (int i = 0; i < 16 * 17; ++i) {
    device_params d = make_device(fmt::format("gpu{}", i), "gpu");
    d.spec<gpu::gpu_spec>()->bar1_bytes = 1 << 20;
    d.spec<gpu::gpu_spec>()->bar1_reserved_bytes = 0;
    t.devices.push_back(d);
    link_params l;
    l.up = "cpu0";
    l.down = d.name;
    l.host_bridge = i % 16;
    t.links.push_back(l);
  }
  CHECK_THROWS_WITH(enumerate(t), Contains("more than 256 PCI bus numbers"));
}
