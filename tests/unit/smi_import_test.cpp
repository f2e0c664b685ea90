// nvidia-smi topo -m text -> topology YAML (p2psim topo --import-nvidia-smi). The oracle for
// the tree it builds is p2psim's own classification of every pair (topology_graph), which the
// importer does not share: on recorded and published matrices, and on the matrices p2psim
// prints for generated machines (random trees of up to three switch levels, several host
// bridges and sockets), imported back.
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "sim/config/error.h"
#include "sim/generate/generate.h"
#include "sim/topology/smi_import.h"
#include "sim/topology/topo_report.h"
#include "sim/topology/topology_graph.h"
#include "sim/topology/topology_loader.h"

using namespace p2psim;
using namespace p2psim::topo;
using Catch::Matchers::Contains;

namespace {

const std::string k_source = P2PSIM_SOURCE_DIR;
const std::vector<std::string> k_platforms{k_source + "/topologies/platforms"};

smi_import_options options(std::string platform = "") {
  return {k_platforms, std::move(platform)};
}

topology load_yaml(const std::string& yaml) {
  INFO(yaml);
  config::document doc = config::document::parse(yaml, "imported.yaml");
  return load_topology(doc, load_options{k_platforms, {}});
}

// The matrix as a test reads it, apart from the importer: words of each row, by label.
struct matrix {
  std::vector<std::string> labels;
  std::vector<std::vector<std::string>> cells;
};
matrix read_matrix(const std::string& path) {
  std::ifstream in(path);
  matrix m;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string s; words >> s;) w.push_back(s);
    if (w.empty()) {
      if (!m.labels.empty()) break;
      continue;
    }
    if (m.labels.empty()) {
      for (const auto& s : w) {
        if (s == "CPU" || s == "NUMA") break;
        m.labels.push_back(s);
      }
      continue;
    }
    m.cells.emplace_back(w.begin() + 1, w.begin() + 1 + long(m.labels.size()));
  }
  return m;
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Every pair the matrix gives a PCIe relation for has it in the imported topology.
void require_same_relations(const matrix& m, const topology& t) {
  const fabric_graph g(t);
  REQUIRE(m.cells.size() == m.labels.size());
  for (size_t a = 0; a < m.labels.size(); ++a)
    for (size_t b = 0; b < m.labels.size(); ++b) {
      if (a == b || m.cells[a][b].rfind("NV", 0) == 0) continue;
      INFO(m.labels[a] << "/" << m.labels[b]);
      CHECK(to_string(g.classify(lower(m.labels[a]), lower(m.labels[b]))) == m.cells[a][b]);
    }
}

config::error error_of(const std::string& text) {
  try {
    import_smi_matrix(text, "inline.txt", options("skylake_sp"));
  } catch (const config::error& e) {
    return e;
  }
  FAIL("expected a config::error");
  throw std::logic_error("unreachable");
}

const char* k_legend =
    "\nLegend:\n\n  X    = Self\n  SYS  = Connection traversing PCIe as well as the SMP "
    "interconnect between NUMA nodes (e.g., QPI/UPI)\n";

}  // namespace

TEST_CASE("smi import: the relations and what else a cell may hold", "[smi_import]") {
  CHECK(smi_closeness("PIX") == 1);
  CHECK(smi_closeness("PXB") == 2);
  CHECK(smi_closeness("PHB") == 3);
  CHECK(smi_closeness("NODE") == 4);
  CHECK(smi_closeness("SYS") == 5);
  CHECK(smi_closeness("NV18") == 0);
  CHECK(smi_closeness("NV1") == 0);
  CHECK_FALSE(smi_closeness("NV"));
  CHECK_FALSE(smi_closeness("NVX"));
  CHECK_FALSE(smi_closeness("X"));
  CHECK_FALSE(smi_closeness("pix"));
  CHECK_FALSE(smi_closeness(""));
}

TEST_CASE("smi import: the recorded two-H200 VM (NVLink only) is one socket", "[smi_import]") {
  const std::string file =
      k_source + "/tests/data/hw_probe/h200x2_driver580.159.04_2026-11-28/host_3b6f0d2c/topo-m.txt";
  const smi_import_result r = import_smi_file(file, options());
  const topology t = load_yaml(r.yaml);
  REQUIRE(t.sockets.size() == 1);
  CHECK(t.sockets[0].platform_name == "skylake_sp");
  CHECK(classify(t, "gpu0", "gpu1") == path_type::PHB);  // placed, each on a root port
  CHECK_THAT(r.yaml, Contains("NVLink: 1 pair(s), e.g. GPU0-GPU1 NV18"));
  CHECK_THAT(r.yaml, Contains("ASSUMED skylake_sp"));
  CHECK_THAT(r.yaml, Contains("NUMA node 0, CPUs 0-31"));
  // Every default taken on the user's behalf is a warning naming the file.
  std::string all;
  for (const auto& w : r.warnings) all += w + "\n";
  CHECK_THAT(all, Contains("topo-m.txt:1:1: warning: nvidia-smi topo -m does not name the CPU"));
  CHECK_THAT(all, Contains("GPU1: PCIe path hidden behind NVLink"));
  CHECK_THAT(all, Contains("every link is Gen3 x16"));
}

TEST_CASE("smi import: --platform sets the sockets' preset and the links' generation",
          "[smi_import]") {
  const std::string file =
      k_source + "/tests/data/hw_probe/h200_driver580.159.04_2026-11-28/host_38fddc71/topo-m.txt";
  const smi_import_result r = import_smi_file(file, options("emerald_rapids"));
  const topology t = load_yaml(r.yaml);
  REQUIRE(t.sockets.size() == 1);
  CHECK(t.sockets[0].platform_name == "emerald_rapids");
  REQUIRE(t.links.size() == 1);
  CHECK(t.links[0].gen == 5);
  CHECK(t.links[0].width == 16);
  for (const auto& w : r.warnings) CHECK_THAT(w, !Contains("does not name the CPU"));
  CHECK_THROWS_AS(import_smi_file(file, options("no_such_cpu")), config::error);
}

TEST_CASE("smi import: published matrices give every PCIe pair its relation", "[smi_import]") {
  const std::string dir = k_source + "/tests/data/nvidia_smi/";
  SECTION("an 8-GPU HGX machine, copied from a terminal (spaces, not tabs): a NIC per GPU") {
    const std::string file = dir + "hgx_8gpu_8nic_spaces.txt";
    const smi_import_result r = import_smi_file(file, options("emerald_rapids"));
    const topology t = load_yaml(r.yaml);
    CHECK(t.sockets.size() == 2);
    CHECK(t.switches.size() == 8);
    require_same_relations(read_matrix(file), t);
    CHECK_THAT(r.yaml, Contains("# NIC7: mlx5_7"));
  }
  SECTION("a DGX A100-like machine: GPU pairs behind two switch levels, storage NICs apart") {
    const std::string file = dir + "dgx_a100_8gpu_10nic.txt";
    const smi_import_result r = import_smi_file(file, options("epyc_turin"));
    const topology t = load_yaml(r.yaml);
    require_same_relations(read_matrix(file), t);
    CHECK_THAT(r.yaml, Contains("NUMA node 3, CPUs 48-63,176-191"));
    CHECK_THAT(r.yaml, Contains("interconnects:"));
  }
}

TEST_CASE("smi import: p2psim's own matrix of generated machines imports back to it",
          "[smi_import]") {
  const auto platforms = generate::platforms_in(k_platforms);
  int checked = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const generate::generated_case c = generate::generate_case(seed, platforms);
    INFO("seed " << seed << ": " << c.summary);
    const topology original = load_yaml(c.topology_yaml);
    if (original.devices.size() < 2) continue;
    std::ostringstream printed;
    print_topo_matrix(printed, original);
    INFO(printed.str());
    const smi_import_result r = import_smi_matrix(printed.str(), c.name + ".txt",
                                                  options(original.sockets[0].platform_name));
    const topology back = load_yaml(r.yaml);
    REQUIRE(back.devices.size() == original.devices.size());
    const fabric_graph was(original), is(back);
    for (const auto& a : original.devices)
      for (const auto& b : original.devices) {
        // Devices are named by their column (GPU0 -> gpu0), as p2psim prints them.
        INFO(a.name << "/" << b.name);
        CHECK(to_string(is.classify(a.name, b.name)) == to_string(was.classify(a.name, b.name)));
      }
    ++checked;
  }
  CHECK(checked >= 40);
}

TEST_CASE("smi import: bad matrices are refused at the cell", "[smi_import]") {
  const std::string header = "\tGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\n";
  SECTION("empty") {
    CHECK_THAT(error_of("").what(), Contains("inline.txt:1:1"));
  }
  SECTION("no device columns") {
    CHECK_THAT(error_of("\tCPU Affinity\tNUMA Affinity\n").what(),
               Contains("inline.txt:1:1: error: no device matrix"));
  }
  SECTION("lines before the header are not the matrix's") {
    const smi_import_result r =
        import_smi_matrix("$ nvidia-smi topo -m\nNVIDIA Topology:\n" + header +
                              "GPU0\t X \tPIX\tPIX\t0-7\t0\nGPU1\tPIX\t X \tPIX\t0-7\t0\n" +
                              "GPU2\tPIX\tPIX\t X \t0-7\t0\n" + k_legend,
                          "inline.txt", options("skylake_sp"));
    CHECK(classify(load_yaml(r.yaml), "gpu0", "gpu2") == path_type::PIX);
  }
  SECTION("a relation nvidia-smi does not print") {
    const config::error e =
        error_of(header + "GPU0\t X \tPIX\tFOO\t0-7\t0\n" +
                 "GPU1\tPIX\t X \tPIX\t0-7\t0\nGPU2\tFOO\tPIX\t X \t0-7\t0\n" + k_legend);
    CHECK(e.loc.line == 2);
    CHECK(e.loc.column == 14);
    CHECK(e.key == "GPU0/GPU2");
    CHECK_THAT(e.message, Contains("'FOO' is not a relation"));
  }
  SECTION("not symmetric") {
    const config::error e =
        error_of(header + "GPU0\t X \tPIX\tPIX\t0-7\t0\nGPU1\tPIX\t X \tPIX\t0-7\t0\n" +
                 "GPU2\tPXB\tPIX\t X \t0-7\t0\n");
    CHECK(e.loc.line == 4);
    CHECK(e.key == "GPU2/GPU0");
    CHECK_THAT(e.message, Contains("symmetric"));
  }
  SECTION("no tree gives it: a PIX b, b PIX c, a PXB c") {
    const config::error e =
        error_of(header + "GPU0\t X \tPIX\tPXB\t0-7\t0\nGPU1\tPIX\t X \tPIX\t0-7\t0\n" +
                 "GPU2\tPXB\tPIX\t X \t0-7\t0\n");
    CHECK(e.loc.line == 4);
    CHECK(e.key == "GPU2/GPU0");
    CHECK_THAT(e.message, Contains("no PCIe tree gives every pair its relation"));
  }
  SECTION("a device that is not X to itself") {
    const config::error e = error_of(header + "GPU0\tPIX\tPIX\tPIX\t0-7\t0\n");
    CHECK(e.key == "GPU0/GPU0");
    CHECK_THAT(e.message, Contains("expected X"));
  }
  SECTION("rows out of order, or missing") {
    CHECK_THAT(error_of(header + "GPU1\t X \tPIX\tPIX\n").message,
               Contains("expected the row of GPU0"));
    CHECK_THAT(error_of(header + "GPU0\t X \tPIX\tPIX\n").message,
               Contains("the matrix ends before the row of GPU1"));
  }
  SECTION("too few cells") {
    CHECK_THAT(error_of(header + "GPU0\t X \tPIX\n").message,
               Contains("2 cells; the header names 3 devices"));
  }
  SECTION("a device named twice") {
    CHECK_THAT(error_of("\tGPU0\tGPU0\n").message, Contains("named twice"));
  }
}
