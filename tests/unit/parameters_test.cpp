// The parameter declarations (models/*/..._spec.h) against their two readers: the effective
// configuration must load back to the same topology, and the tables in docs/ must be what the
// declarations say.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/config/param_reader.h"
#include "sim/topology/parameters.h"
#include "sim/topology/topology_loader.h"

using namespace p2psim;

namespace {

const std::string k_root = P2PSIM_SOURCE_DIR;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

topo::load_options options() {
  return {{k_root + "/topologies/platforms", k_root + "/tests/data/topologies/platforms"}, {}};
}

}  // namespace

TEST_CASE("parameters: the effective configuration loads back to the same topology",
          "[parameters]") {
  namespace fs = std::filesystem;
  int files = 0;
  for (const auto& dir : {k_root + "/topologies", k_root + "/tests/data/topologies/good"})
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() != ".yaml") continue;
      const std::string path = entry.path().string();
      INFO(path);
      const topo::topology first = topo::load_topology(path, options());
      const std::string dumped = topo::effective_yaml(first);
      // Named as a file beside the original, so its presets are found the same way.
      config::document doc = config::document::parse(dumped, path);
      const topo::topology second = topo::load_topology(doc, options());
      CHECK(topo::effective_yaml(second) == dumped);
      ++files;
    }
  CHECK(files >= 12);
}

TEST_CASE("parameters: an overridden value shows in the effective configuration", "[parameters]") {
  auto o = options();
  o.overrides.push_back(config::parse_override("switch.sw0.latency=1.5us"));
  o.overrides.push_back(config::parse_override("device.gpu0.vram_bandwidth=100Gb/s"));
  o.overrides.push_back(config::parse_override("socket.cpu0.iommu.miss_latency=500ps"));
  const std::string y =
      topo::effective_yaml(topo::load_topology(k_root + "/topologies/switch_only.yaml", o));
  CHECK_THAT(y, Catch::Matchers::Contains("latency: 1500ns"));
  CHECK_THAT(y, Catch::Matchers::Contains("vram_bandwidth: 12.5GB/s"));
  CHECK_THAT(y, Catch::Matchers::Contains("miss_latency: 500ps"));
}

TEST_CASE("parameters: the tables in docs/formats-topology.md are the declarations",
          "[parameters]") {
  const std::string path = k_root + "/docs/formats-topology.md";
  const std::string doc = read_file(path);
  // Every table is in the page once.
  for (const auto& t : topo::parameter_tables()) {
    INFO(t.name);
    CHECK(doc.find("<!-- parameters: " + t.name + " -->") != std::string::npos);
  }
  INFO("regenerate with: p2psim params --update-docs docs/formats-topology.md");
  CHECK(topo::regenerate_parameter_blocks(doc) == doc);
}

TEST_CASE("parameters: a declared limit is checked and named", "[parameters]") {
  struct spec {
    uint32_t size = 64;
    double rate = 1;
  };
  const params::table<spec> t{
      params::size("size", &spec::size, "A size.").power_of_two(64, 4096).or_zero(),
      params::bandwidth("rate", &spec::rate, "A rate.").above_zero(),
  };
  auto read = [&](const std::string& text) {
    config::document doc = config::document::parse(text, "t.yaml");
    spec s;
    config::read_params(doc.root(), t, s);
    return s;
  };
  CHECK(read("size: 0").size == 0);
  CHECK(read("size: 4KiB").size == 4096);
  CHECK(read("{}").size == 64);
  CHECK_THROWS_WITH(read("size: 96B"),
                    Catch::Matchers::Contains(
                        "t.yaml:1:7: error: size: expected a power of two from 64B to 4KiB (or "
                        "0), got 96B"));
  CHECK_THROWS_WITH(read("size: 8KiB"), Catch::Matchers::Contains("got 8KiB"));
  CHECK_THROWS_WITH(read("rate: 0"),
                    Catch::Matchers::Contains("rate: expected a bandwidth above 0"));
  CHECK(read("rate: 100Gb/s").rate == Approx(12.5));
}
