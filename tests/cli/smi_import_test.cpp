// p2psim topo --import-nvidia-smi: `nvidia-smi topo -m` text in, a topology file out that
// `p2psim topo` prints and `p2psim run` runs, every assumption a warning on stderr.
#include <catch2/catch.hpp>
#include <fstream>

#include "tests/cli/cli_harness.h"

namespace {

using p2psim::test::run_cli;

const std::string k_h200 =
    "tests/data/hw_probe/h200_driver580.159.04_2026-11-28/host_38fddc71/topo-m.txt";

std::string imported(const std::string& name) {
  return std::string(P2PSIM_BUILD_DIR) + "/smi_" + name + ".yaml";
}

}  // namespace

TEST_CASE("import-nvidia-smi: the recorded H200 VM, on the preset given", "[cli][smi]") {
  const std::string out = imported("h200");
  auto r = run_cli("topo --import-nvidia-smi " + k_h200 + " --platform emerald_rapids -o " + out);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("Wrote " + out + ": 1 socket(s), 0 switch(es), 1 GPU(s), 0 NIC(s)") !=
        std::string::npos);
  CHECK(r.err.find("warning: the matrix has no link speeds or widths: every link is Gen5 x16") !=
        std::string::npos);
  r = run_cli("topo " + out);
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("root port -> gpu0, Gen5 x16") != std::string::npos);
}

TEST_CASE("import-nvidia-smi: without --platform the assumed preset is a warning", "[cli][smi]") {
  auto r = run_cli("topo --import-nvidia-smi " + k_h200);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("platform: skylake_sp") != std::string::npos);  // the YAML, on stdout
  CHECK(r.err.find("topo-m.txt:1:1: warning: nvidia-smi topo -m does not name the CPU: sockets "
                   "get the skylake_sp preset") != std::string::npos);
}

TEST_CASE("import-nvidia-smi: a scenario runs on an imported 8-GPU machine", "[cli][smi]") {
  const std::string yaml = imported("hgx");
  auto r = run_cli(
      "topo --import-nvidia-smi tests/data/nvidia_smi/hgx_8gpu_8nic_spaces.txt "
      "--platform emerald_rapids -o " +
      yaml);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string scenario = std::string(P2PSIM_BUILD_DIR) + "/smi_hgx_scenario.yaml";
  std::ofstream(scenario) << "name: smi_hgx\ntopology: " << yaml
                          << "\ntransfers:\n"
                             "  - {name: pix, initiator: nic0, target: gpu0, op: write, "
                             "size: 64KiB}\n"
                             "  - {name: sys, initiator: nic4, target: gpu0, op: write, "
                             "size: 64KiB}\n"
                             "measure: {bandwidth: true, latency: false}\n"
                             "verify: true\n";
  r = run_cli("run " + scenario);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
}

TEST_CASE("import-nvidia-smi: options that do not go together exit 2", "[cli][smi][bad]") {
  CHECK(run_cli("topo topologies/single_rc.yaml --platform skylake_sp").exit_code == 2);
  CHECK(run_cli("topo topologies/single_rc.yaml -o /dev/null").exit_code == 2);
  CHECK(run_cli("topo --import-nvidia-smi " + k_h200 +
                " --import-nccl tests/data/nccl/pix_switch.xml")
            .exit_code == 2);
  auto r = run_cli("topo --import-nvidia-smi " + k_h200 + " --platform no_such_cpu");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--platform: error: no platform preset 'no_such_cpu'; there are: ") !=
        std::string::npos);
  r = run_cli("topo --import-nvidia-smi tests/data/nvidia_smi/missing.txt");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("missing.txt: error: no such file") != std::string::npos);
}
