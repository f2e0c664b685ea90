// p2psim topo --import-nccl: NCCL topology XML in, a topology file out that `p2psim topo` prints
// with the GPU-NIC class NCCL's file describes, and that `p2psim run` runs.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <vector>

#include "tests/cli/cli_harness.h"

namespace {

using p2psim::test::in_build;
using p2psim::test::run_cli;

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, '\t')) {
    size_t a = cell.find_first_not_of(' '), b = cell.find_last_not_of(' ');
    cells.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
  }
  return cells;
}

// The cell of `p2psim topo`'s nvidia-smi style matrix at row `row`, column `col`.
std::string matrix_cell(const std::string& out, const std::string& row, const std::string& col) {
  std::stringstream ss(out);
  std::string line;
  std::vector<std::string> header;
  while (std::getline(ss, line)) {
    if (header.empty() && line.starts_with("\tGPU")) header = split_tabs(line);
    if (!header.empty() && line.starts_with(row + "\t")) {
      std::vector<std::string> cells = split_tabs(line);
      for (size_t i = 1; i < header.size() && i < cells.size(); ++i)
        if (header[i] == col) return cells[i];
    }
  }
  return "(no " + row + "/" + col + " in the matrix)";
}

// Imports tests/data/nccl/XML into the build directory; returns the YAML's path.
std::string import_to(const std::string& xml, const std::string& name) {
  std::string out = std::string(P2PSIM_BUILD_DIR) + "/nccl_" + name + ".yaml";
  auto r = run_cli("topo --import-nccl tests/data/nccl/" + xml + " -o " + out);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("Wrote " + out) != std::string::npos);
  return out;
}

std::string gpu_nic_class(const std::string& xml, const std::string& name) {
  auto r = run_cli("topo " + import_to(xml, name));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  return matrix_cell(r.out, "GPU0", "NIC0");
}

void expect_bad(const std::string& args, const std::string& location, const std::string& words) {
  auto r = run_cli(args);
  INFO(args << "\nstderr: " << r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(location) != std::string::npos);
  CHECK(r.err.find(words) != std::string::npos);
}

}  // namespace

TEST_CASE("import-nccl: GPU and NIC under one switch are PIX", "[cli][nccl]") {
  CHECK(gpu_nic_class("pix_switch.xml", "pix") == "PIX");
}

TEST_CASE("import-nccl: GPU and NIC on two root ports of one CPU are PHB", "[cli][nccl]") {
  CHECK(gpu_nic_class("phb_root_ports.xml", "phb") == "PHB");
}

TEST_CASE("import-nccl: GPU and NIC on two sockets are SYS", "[cli][nccl]") {
  CHECK(gpu_nic_class("sys_two_sockets.xml", "sys") == "SYS");
}

TEST_CASE("import-nccl: a synthetic bridge over a second switch level is PXB", "[cli][nccl]") {
  CHECK(gpu_nic_class("pxb_synthetic.xml", "pxb") == "PXB");
}

TEST_CASE("import-nccl: a lowered link gen is a warning on stderr", "[cli][nccl]") {
  std::string out = std::string(P2PSIM_BUILD_DIR) + "/nccl_phb_warn.yaml";
  auto r = run_cli("topo --import-nccl tests/data/nccl/phb_root_ports.xml -o " + out);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("phb_root_ports.xml:6:5: warning: link_speed: Gen4 written as Gen3") !=
        std::string::npos);
}

TEST_CASE("import-nccl: a scenario runs on imported topologies", "[cli][nccl]") {
  for (const std::string name : {"pix_switch", "sys_two_sockets"}) {
    INFO(name);
    std::string yaml = import_to(name + ".xml", "run_" + name);
    std::string scenario = std::string(P2PSIM_BUILD_DIR) + "/nccl_run_" + name + "_scenario.yaml";
    std::ofstream(scenario) << "name: nccl_run_" << name << "\ntopology: " << yaml
                            << "\ntransfers:\n"
                               "  - {name: write, initiator: nic0, target: gpu0, op: write, "
                               "size: 64KiB}\n"
                               "  - {name: read, initiator: nic0, target: gpu0, op: read, "
                               "size: 64KiB}\n"
                               "measure: {bandwidth: true, latency: false}\n"
                               "verify: true\n";
    auto r = run_cli("run " + scenario);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
  }
}

TEST_CASE("import-nccl: without -o the YAML goes to standard output", "[cli][nccl]") {
  auto r = run_cli("topo --import-nccl tests/data/nccl/pix_switch.xml");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("  - {up: sw0, down: gpu0, gen: 3, width: 16}") != std::string::npos);
}

TEST_CASE("import-nccl: -o /dev/null checks the import and keeps nothing", "[cli][nccl]") {
  // What is written is loaded from memory, not read back from a file that may not hold it.
  auto r = run_cli("topo --import-nccl tests/data/nccl/pix_switch.xml -o /dev/null");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("Wrote /dev/null: 1 socket(s), 1 switch(es), 1 GPU(s)") != std::string::npos);
}

TEST_CASE("import-nccl: bad files exit 2 with file and line", "[cli][nccl][bad]") {
  expect_bad("topo --import-nccl tests/corpus/bad/nccl_not_xml.xml -o /dev/null",
             "nccl_not_xml.xml:5:", "XML");
  expect_bad("topo --import-nccl tests/corpus/bad/nccl_no_system.xml", "nccl_no_system.xml:3:1",
             "expected <system>");
  expect_bad("topo --import-nccl tests/corpus/bad/nccl_link_speed_not_numeric.xml",
             "nccl_link_speed_not_numeric.xml:4:5", "link_speed: 'fast'");
  expect_bad("topo --import-nccl tests/corpus/bad/nccl_unknown_class.xml",
             "nccl_unknown_class.xml:4:5", "0x088000");
  expect_bad("topo --import-nccl topologies/single_rc.yaml", "single_rc.yaml:", "XML");
  expect_bad("topo --import-nccl tests/data/nccl/missing.xml", "missing.xml", "no such file");
}

TEST_CASE("import-nccl: topo needs a topology or --import-nccl", "[cli][nccl][bad]") {
  auto r = run_cli("topo");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--import-nccl") != std::string::npos);
  r = run_cli("topo topologies/single_rc.yaml --import-nccl tests/data/nccl/pix_switch.xml");
  CHECK(r.exit_code == 2);
}

// Issue acceptance, on the H200 VM p2psim recorded (tests/data/hw_probe/README.md): the imported
// machine keeps its Gen5 link, its GPU's BAR1 (the h200 device preset, from PCI ID 10de:2335)
// and a modern CPU preset (Emerald Rapids, from family 6 model 0xcf).
TEST_CASE("import-nccl: an imported H200 VM shows Gen5, its BAR1 and its CPU's preset",
          "[cli][nccl]") {
  auto r = run_cli("topo " + import_to("h200_vm_nccl2.28.9.xml", "h200_vm"));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("cpu0 (emerald_rapids)") != std::string::npos);
  CHECK(r.out.find("root port -> gpu0, Gen5 x16") != std::string::npos);
  CHECK(r.out.find("gpu0 (GPU h200): BAR0 16MiB @ 0x4040_0000_0000, BAR1 256GiB") !=
        std::string::npos);
}

// The same on an HGX-class H100 machine: link speeds written as "32.0 GT/s" (no " PCIe"), the
// h100_sxm preset from 10de:2330 (BAR1 128 GiB), Sapphire Rapids from family 6 model 143, the
// ConnectX-7 preset from 15b3:1021, and each NVLink kept as a warning at its line.
TEST_CASE("import-nccl: an HGX H100 dump shows Gen5, 128 GiB of BAR1 and its presets",
          "[cli][nccl]") {
  const std::string yaml = in_build("nccl_hgx_h100.yaml");
  auto w = run_cli("topo --import-nccl tests/data/nccl/hgx_h100_switch.xml -o " + yaml);
  INFO(w.out << w.err);
  REQUIRE(w.exit_code == 0);
  CHECK(w.err.find("hgx_h100_switch.xml:11:11: warning: nvlink: 4 NVLink(s)") != std::string::npos);
  auto r = run_cli("topo " + yaml);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("cpu0 (sapphire_rapids)") != std::string::npos);
  CHECK(r.out.find("port -> gpu0, Gen5 x16") != std::string::npos);
  CHECK(r.out.find("gpu0 (GPU h100_sxm): BAR0 16MiB @ 0x4020_0000_0000, BAR1 128GiB") !=
        std::string::npos);
  CHECK(r.out.find("nic0 (DMA engine connectx7)") != std::string::npos);
  CHECK(r.out.find("GPU0\t X \tPIX") != std::string::npos);
}
