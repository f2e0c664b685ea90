// Path classification (nvidia-smi / GPUDirect RDMA classes) and the reports.
#include <catch2/catch.hpp>

#include <sstream>

#include "sim/topology/topo_report.h"
#include "sim/topology/topology_graph.h"
#include "sim/topology/topology_loader.h"

using namespace p2psim;
using namespace p2psim::topo;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

const std::string k_dir = std::string(P2PSIM_SOURCE_DIR) + "/tests/data/topologies/";

topology load(const std::string& name) {
  return load_topology(k_dir + name, {{k_dir + "platforms"}, {}});
}

}  // namespace

TEST_CASE("topology paths: every path type", "[topology][paths]") {
  topology t = load("good/all_paths.yaml");
  fabric_graph g(t);
  CHECK(g.classify("gpu0", "gpu0") == path_type::X);
  CHECK(g.classify("gpu0", "nic0") == path_type::PIX);
  CHECK(g.classify("gpu0", "gpu1") == path_type::PXB);
  CHECK(g.classify("gpu0", "gpu2") == path_type::PHB);
  CHECK(g.classify("gpu0", "gpu3") == path_type::NODE);
  CHECK(g.classify("gpu0", "gpu4") == path_type::SYS);
  CHECK(g.classify("gpu4", "gpu0") == path_type::SYS);
  CHECK(g.classify("gpu2", "gpu3") == path_type::NODE);
  CHECK(classify(t, "nic0", "gpu1") == path_type::PXB);
  CHECK_THROWS_AS(g.classify("gpu0", "gpu9"), std::invalid_argument);
  CHECK_THROWS_AS(g.classify("gpu0", "cpu0.hb0"), std::invalid_argument);
}

TEST_CASE("topology paths: the three GPUDirect RDMA classes on their fixtures",
          "[topology][paths]") {
  CHECK(classify(load("good/switch_only.yaml"), "gpu0", "nic0") == path_type::PIX);
  CHECK(classify(load("good/cascaded.yaml"), "gpu0", "gpu1") == path_type::PXB);
  CHECK(classify(load("good/cascaded.yaml"), "gpu0", "nic0") == path_type::PIX);
  CHECK(classify(load("good/single_rc.yaml"), "gpu0", "nic0") == path_type::PHB);
  CHECK(classify(load("good/two_host_bridges.yaml"), "gpu0", "nic0") == path_type::NODE);
  CHECK(classify(load("good/two_sockets.yaml"), "gpu0", "nic0") == path_type::SYS);
}

TEST_CASE("topology paths: class numbers and names and path nodes", "[topology][paths]") {
  CHECK(topology_class(path_type::X) == 0);
  CHECK(topology_class(path_type::PIX) == 1);
  CHECK(topology_class(path_type::PXB) == 1);
  CHECK(topology_class(path_type::PHB) == 2);
  CHECK(topology_class(path_type::NODE) == 2);
  CHECK(topology_class(path_type::SYS) == 3);
  CHECK(topology_class_name(1) == "PCIe switches only");
  CHECK(topology_class_name(2) == "single CPU/IOH");
  CHECK(topology_class_name(3) == "CPU/IOH <-> QPI/HT <-> CPU/IOH");
  CHECK(to_string(path_type::NODE) == "NODE");
  CHECK(to_string(path_type::X) == "X");
  topology t = load("good/all_paths.yaml");
  using v = std::vector<std::string>;
  CHECK(path_nodes(t, "gpu0", "gpu1") == v{"gpu0", "sw1", "sw0", "sw2", "gpu1"});
  CHECK(path_nodes(t, "gpu0", "gpu4") == v{"gpu0", "sw1", "sw0", "cpu0", "cpu1", "gpu4"});
  CHECK(path_nodes(t, "gpu2", "gpu3") == v{"gpu2", "cpu0", "gpu3"});
  CHECK(path_nodes(t, "gpu0", "gpu0") == v{"gpu0"});
}

TEST_CASE("topology report: nvidia-smi topo -m matrix", "[topology][report]") {
  std::ostringstream os;
  print_topo_matrix(os, load("good/all_paths.yaml"));
  const std::string expected =
      "\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tNIC0\tCPU Affinity\tNUMA Affinity\n"
      "GPU0\t X \tPXB\tPHB\tNODE\tSYS\tPIX\tcpu0\t0\n"
      "GPU1\tPXB\t X \tPHB\tNODE\tSYS\tPXB\tcpu0\t0\n"
      "GPU2\tPHB\tPHB\t X \tNODE\tSYS\tPHB\tcpu0\t0\n"
      "GPU3\tNODE\tNODE\tNODE\t X \tSYS\tNODE\tcpu0\t0\n"
      "GPU4\tSYS\tSYS\tSYS\tSYS\t X \tSYS\tcpu1\t1\n"
      "NIC0\tPIX\tPXB\tPHB\tNODE\tSYS\t X \tcpu0\t0\n"
      "\n"
      "Legend:\n"
      "\n"
      "  X    = Self\n"
      "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes "
      "(e.g., QPI/UPI)\n"
      "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges "
      "within a NUMA node\n"
      "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
      "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host "
      "Bridge)\n"
      "  PIX  = Connection traversing at most a single PCIe bridge\n"
      "  NV#  = Connection traversing a bonded set of # NVLinks\n"
      "\n"
      "GPUDirect RDMA class (GPUDirect RDMA guide 13.3, 5.4 Supported Systems):\n"
      "\n"
      "  1 = PIX, PXB  : PCIe switches only (best performance)\n"
      "  2 = PHB, NODE : single CPU/IOH (works; P2P reads may be severely limited)\n"
      "  3 = SYS       : CPU/IOH <-> QPI/HT <-> CPU/IOH (extremely limited or not working "
      "reliably)\n";
  CHECK(os.str() == expected);
}

TEST_CASE("topology report: GPUs come before DMA engines in the matrix", "[topology][report]") {
  std::ostringstream os;
  print_topo_matrix(os, load("good/full.yaml"));
  CHECK_THAT(os.str(), StartsWith("\tGPU0\tNIC0\tCPU Affinity\tNUMA Affinity\n"
                                  "GPU0\t X \tSYS\tcpu0\t0\n"
                                  "NIC0\tSYS\t X \tcpu1\t1\n"));
}

TEST_CASE("topology report: lspci-like tree", "[topology][report]") {
  topology t = load("good/switch_only.yaml");
  std::ostringstream os;
  print_tree(os, t, enumerate(t));
  const std::string s = os.str();
  INFO(s);
  CHECK_THAT(s, StartsWith("cpu0 (tiny_gen4): memory 64GiB @ 0x0, MMIO "
                           "0x4000_0000_0000-0x43ff_ffff_ffff, buses 00-04, IOMMU off\n"
                           "\\-[00] host bridge 0 (00:00.0)\n"
                           "   \\-00:01.0 root port -> sw0, Gen4 x16, buses 01-04, window "
                           "0x4000_0000_0000-0x4000_18ff_ffff\n"
                           "      \\-01:00.0 sw0 (switch, internal bus 02)\n"
                           "         +-02:00.0 port -> gpu0, Gen4 x16, bus 03, window "
                           "0x4000_0000_0000-0x4000_10ff_ffff\n"
                           "         |  \\-03:00.0 gpu0 (GPU): BAR0 16MiB @ 0x4000_1000_0000, "
                           "BAR1 256MiB @ 0x4000_0000_0000\n"));
  CHECK_THAT(s, Contains("\\-02:01.0 port -> nic0, Gen3 x8, bus 04"));
  // Largest BAR first: BAR2 takes the next 64 MiB boundary, BAR0 follows it.
  CHECK_THAT(s, Contains("04:00.0 nic0 (DMA engine): BAR0 16MiB @ 0x4000_1800_0000, BAR2 64MiB @ "
                         "0x4000_1400_0000\n"));
}

TEST_CASE("topology report: Graphviz DOT", "[topology][report]") {
  std::ostringstream os;
  write_dot(os, load("good/all_paths.yaml"));
  const std::string s = os.str();
  INFO(s);
  CHECK_THAT(s, StartsWith("graph G {"));
  CHECK_THAT(s, Contains("cpu0.hb1"));
  CHECK_THAT(s, Contains("label=\"Gen4 x16\""));
  CHECK_THAT(s, Contains("label=\"upi0 20.8 GB/s\""));
  CHECK_THAT(s, Contains("shape=box3d"));
  CHECK_THAT(s, Contains("shape=ellipse"));
  CHECK_THAT(s, Contains("cpu0--cpu1") || Contains("cpu1--cpu0"));
}
