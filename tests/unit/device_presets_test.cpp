// Device presets (topologies/devices/): every shipped one loads, is sourced and has its own PCI
// device IDs; a device or a switch takes its model's settings with its own keys over them; a
// wrong model, type or preset key is refused at its line.
#include <fmt/format.h>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <sstream>

#include "models/gpu/gpu_spec.h"
#include "sim/config/error.h"
#include "sim/topology/device_presets.h"
#include "sim/topology/topo_report.h"
#include "sim/topology/topology_loader.h"

using namespace p2psim;
using namespace p2psim::topo;
using Catch::Matchers::Contains;

namespace {

const std::string k_source = P2PSIM_SOURCE_DIR;
const std::vector<std::string> k_platforms{k_source + "/topologies/platforms"};

topology load_text(const std::string& devices, const std::string& name = "inline.yaml") {
  std::string links = "links:\n  - {up: cpu0, down: gpu0, gen: 5, width: 16}\n";
  if (devices.find("name: gpu1") != std::string::npos)
    links += "  - {up: cpu0, down: gpu1, gen: 5, width: 16}\n";
  const std::string yaml =
      "sockets: [{name: cpu0, platform: emerald_rapids}]\ndevices:\n" + devices + links;
  config::document doc = config::document::parse(yaml, name);
  return load_topology(doc, load_options{k_platforms, {}});
}

// A machine with one switch (written as `switch_yaml`) between the socket and a GPU.
topology load_switch(const std::string& switch_yaml) {
  const std::string yaml = "sockets: [{name: cpu0, platform: emerald_rapids}]\nswitches: [" +
                           switch_yaml +
                           "]\ndevices: [{name: gpu0}]\nlinks:\n"
                           "  - {up: cpu0, down: sw0, gen: 4, width: 16}\n"
                           "  - {up: sw0, down: gpu0, gen: 4, width: 16}\n";
  config::document doc = config::document::parse(yaml, "switch.yaml");
  return load_topology(doc, load_options{k_platforms, {}});
}

config::error error_of(const std::string& devices) {
  try {
    load_text(devices);
  } catch (const config::error& e) {
    return e;
  }
  FAIL("expected a config::error");
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("device presets: the shipped ones load, are sourced, and own their PCI IDs",
          "[topology][device_presets]") {
  device_preset_finder presets(device_preset_dirs(k_platforms));
  const auto names = presets.names();
  CHECK(names.size() >= 5);
  std::set<uint32_t> ids;
  std::map<std::string, int> types;
  for (const auto& n : names) {
    INFO(n);
    const device_preset* p = presets.find(n);
    REQUIRE(p);
    ++types[p->type];
    CHECK(p->source.size() > 40);
    for (uint32_t id : p->pci_ids) CHECK(ids.insert(id).second);  // one preset per ID
    if (p->type == "switch") {  // on a switch, the way a topology names it
      const topology t = load_switch(fmt::format("{{name: sw0, model: {}}}", n));
      CHECK(t.switches[0].model == n);
      continue;
    }
    CHECK_FALSE(p->pci_ids.empty());  // what importers know a device by
    const topology t = load_text(fmt::format("  - {{name: gpu0, model: {}}}\n", n));
    CHECK(t.devices[0].model == n);
  }
  CHECK(types["gpu"] >= 5);
  CHECK(types["dma_engine"] >= 2);
  CHECK(types["switch"] >= 2);
  CHECK(presets.for_pci_id(0x10de, 0x2331) == "h100_pcie");
  CHECK(presets.for_pci_id(0x10de, 0x2335) == "h200");
  CHECK_FALSE(presets.for_pci_id(0x10de, 0x1db4));
  CHECK_FALSE(presets.for_pci_id(0x15b3, 0x2331));  // another vendor's device 0x2331
  CHECK(presets.find("no_such_gpu") == nullptr);
  CHECK(presets.find("../platforms/skylake_sp") == nullptr);  // names, not paths
}

TEST_CASE("device presets: a device's own keys go over its model's", "[topology][device_presets]") {
  const topology t = load_text(
      "  - {name: gpu0, model: h100_pcie}\n  - {name: gpu1, model: h100_pcie, bar1: 16GiB}\n");
  const auto* a = t.devices[0].spec<gpu::gpu_spec>();
  const auto* b = t.devices[1].spec<gpu::gpu_spec>();
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->bar1_bytes == 128ull << 30);
  CHECK(a->vram_bytes == 80ull << 30);
  CHECK(a->vram_bandwidth_gbs == 2000);
  CHECK(b->bar1_bytes == 16ull << 30);                                   // its own
  CHECK(b->vram_bytes == 80ull << 30);                                   // the model's
  CHECK(a->bar1_reserved_bytes == gpu::gpu_spec{}.bar1_reserved_bytes);  // not in the preset
}

TEST_CASE("device presets: wrong models and types are refused at the key",
          "[topology][device_presets]") {
  config::error e = error_of("  - {name: gpu0, model: h900}\n");
  CHECK(e.key == "model");
  CHECK(e.loc.line == 3);
  CHECK_THAT(e.message, Contains("unknown device preset 'h900' (available: a10, a100_pcie_40gb, "));
  e = error_of("  - {name: gpu0, model: h100_pcie, type: dma_engine}\n");
  CHECK(e.key == "type");
  CHECK_THAT(e.message, Contains("model h100_pcie is a gpu, not a dma_engine"));
}

TEST_CASE("device presets: a bad preset file is refused at its own line",
          "[topology][device_presets]") {
  const std::string dir = k_source + "/tests/data/topologies/device_presets";
  CHECK_THROWS_WITH(
      load_device_preset(dir + "/bad_pci_id.yaml"),
      Contains("bad_pci_id.yaml:4:") && Contains("'10de:23310' is not a PCI vendor:device ID"));
  CHECK_THROWS_WITH(load_device_preset(dir + "/misnamed.yaml"),
                    Contains("preset 'other' must be in a file named other.yaml"));
}

TEST_CASE("device presets: a switch takes its model's settings, its own keys over them",
          "[topology][device_presets]") {
  topology t = load_switch("{name: sw0, model: pex88096}");
  CHECK(t.switches[0].latency_ns == 105);
  CHECK(t.switches[0].cut_through);
  t = load_switch("{name: sw0, model: pex89144, latency: 150ns}");
  CHECK(t.switches[0].latency_ns == 150);
  // A switch's model must be a switch preset, and a device's a device preset.
  try {
    load_switch("{name: sw0, model: h200}");
    FAIL("a GPU preset on a switch was accepted");
  } catch (const config::error& e) {
    CHECK(e.key == "model");
    CHECK_THAT(e.message, Contains("model h200 is a gpu, not a switch"));
  }
  config::error e = error_of("  - {name: gpu0, model: pex88096}\n");
  CHECK(e.key == "model");
  CHECK_THAT(e.message, Contains("model pex88096 is a switch, not a device"));
}

TEST_CASE("device presets: a NIC preset sets its read request size and tags",
          "[topology][device_presets]") {
  const topology t = load_text("  - {name: gpu0, model: connectx7}\n");
  CHECK(t.devices[0].control.mrrs == 512);
  CHECK(t.devices[0].control.mps == 256);  // the path's, which the topology sets
  CHECK(t.devices[0].control.tags == 256);
  device_preset_finder presets(device_preset_dirs(k_platforms));
  CHECK(presets.for_pci_id(0x15b3, 0x1021) == "connectx7");
  CHECK(presets.for_pci_id(0x15b3, 0x101d) == "connectx6dx");
}

TEST_CASE("device presets: the topology report names each device's and switch's model",
          "[topology][device_presets]") {
  const topology t = load_switch("{name: sw0, model: pex88096}");
  std::ostringstream out;
  print_tree(out, t, enumerate(t));
  CHECK_THAT(out.str(), Contains("sw0 (switch pex88096, internal bus"));
  const topology g = load_text("  - {name: gpu0, model: h200}\n");
  std::ostringstream out2;
  print_tree(out2, g, enumerate(g));
  CHECK_THAT(out2.str(), Contains("gpu0 (GPU h200): BAR0"));
  std::ostringstream dot;
  write_dot(dot, t);
  CHECK_THAT(dot.str(), Contains("switch pex88096"));
}
