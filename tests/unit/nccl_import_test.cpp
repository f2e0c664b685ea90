// NCCL topology XML -> topology YAML (p2psim topo --import-nccl): the mapping rules, and that
// what is written loads and classifies the GPU-NIC path as NCCL's file describes it.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <catch2/catch.hpp>

#include "models/gpu/gpu_spec.h"
#include "sim/config/error.h"
#include "sim/topology/nccl_import.h"
#include "sim/topology/topology_graph.h"
#include "sim/topology/topology_loader.h"

using namespace p2psim;
using namespace p2psim::topo;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;

namespace {

const std::string k_data = std::string(P2PSIM_SOURCE_DIR) + "/tests/data/nccl/";
const std::vector<std::string> k_platforms{std::string(P2PSIM_SOURCE_DIR) +
                                           "/topologies/platforms"};

struct imported {
  nccl_import_result result;
  topology t;
  path_type path(const std::string& a, const std::string& b) const {
    return fabric_graph(t).classify(a, b);
  }
};

imported load_yaml(nccl_import_result r, const std::string& name) {
  INFO(r.yaml);
  config::document doc = config::document::parse(r.yaml, name + ".yaml");
  topology t = load_topology(doc, load_options{k_platforms, {}});
  return {std::move(r), std::move(t)};
}
imported import_file(const std::string& name) {
  return load_yaml(import_nccl_file(k_data + name, {k_platforms}), name);
}
imported import_text(const std::string& xml) {
  return load_yaml(import_nccl_xml(xml, "inline.xml", {k_platforms}), "inline");
}

config::error error_of(const std::string& xml, const std::string& file = "inline.xml") {
  try {
    import_nccl_xml(xml, file, {k_platforms});
  } catch (const config::error& e) {
    return e;
  }
  FAIL("expected a config::error");
  throw std::logic_error("unreachable");
}
config::error file_error_of(const std::string& name) {
  try {
    import_nccl_file(k_data + name, {k_platforms});
  } catch (const config::error& e) {
    return e;
  }
  FAIL("expected a config::error");
  throw std::logic_error("unreachable");
}

// The line of `text` containing `needle`.
std::string line_with(const std::string& text, const std::string& needle) {
  size_t at = text.find(needle);
  if (at == std::string::npos) return "";
  size_t begin = text.rfind('\n', at) + 1, end = text.find('\n', at);
  return text.substr(begin, end - begin);
}

// One cpu holding `body`, for the error cases.
std::string in_cpu(const std::string& body) {
  return "<system version=\"1\">\n"
         "  <cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" "
         "modelid=\"85\">\n" +
         body + "  </cpu>\n</system>\n";
}

}  // namespace

TEST_CASE("nccl import: link speeds map to PCIe generations", "[topology][nccl]") {
  CHECK(pcie_gen_of_speed("2.5 GT/s") == 1);
  CHECK(pcie_gen_of_speed("2.5 GT/s PCIe") == 1);
  CHECK(pcie_gen_of_speed("5 GT/s") == 2);
  CHECK(pcie_gen_of_speed("5.0 GT/s PCIe") == 2);
  CHECK(pcie_gen_of_speed("8 GT/s") == 3);
  CHECK(pcie_gen_of_speed("8.0 GT/s PCIe") == 3);
  CHECK(pcie_gen_of_speed("16 GT/s") == 4);
  CHECK(pcie_gen_of_speed("16.0 GT/s PCIe") == 4);
  CHECK(pcie_gen_of_speed("32 GT/s") == 5);
  CHECK(pcie_gen_of_speed(" 32.0 GT/s PCIe ") == 5);
  CHECK(pcie_gen_of_speed("64.0 GT/s PCIe") == 6);  // known, but beyond what p2psim models
  for (const char* bad : {"", "Unknown", "10 GT/s", "8", "8 Gb/s", "GT/s", "fast", "-8 GT/s"}) {
    INFO(bad);
    CHECK_FALSE(pcie_gen_of_speed(bad).has_value());
  }
}

TEST_CASE("nccl import: bus IDs and synthetic bridges", "[topology][nccl]") {
  CHECK(parse_busid("0000:17:00.0") == pci_busid{0, 0x17, 0, 0});
  CHECK(parse_busid("00000001:c1:1f.7") == pci_busid{1, 0xc1, 0x1f, 7});  // NVML's 8 digits
  CHECK(parse_busid("ffff:ff:01.0") == pci_busid{0xffff, 0xff, 1, 0});
  for (const char* bad : {"", "17:00.0", "0000:17:00", "0000:1g:00.0", "0000:17:20.0",
                          "0000:17:00.8", "0000:117:00.0"}) {
    INFO(bad);
    CHECK_FALSE(parse_busid(bad).has_value());
  }
  CHECK(is_synthetic_busid("ffff:ff:01.0"));
  CHECK(is_synthetic_busid("FFFF:FF:02.0"));
  CHECK_FALSE(is_synthetic_busid("0000:ff:01.0"));
  CHECK_FALSE(is_synthetic_busid("ffff:fe:01.0"));
}

TEST_CASE("nccl import: PCI classes decide bridge GPU NIC or neither", "[topology][nccl]") {
  CHECK(classify_pci("0x060400", false, false) == pci_kind::bridge);
  CHECK(classify_pci("0x060401", false, false) == pci_kind::bridge);  // subtractive decode
  CHECK(classify_pci("0x030200", false, false) == pci_kind::gpu);     // 3D controller
  CHECK(classify_pci("0x030000", true, false) == pci_kind::gpu);      // VGA with a <gpu>
  CHECK(classify_pci("0x030000", false, false) == pci_kind::other);   // a BMC's VGA
  CHECK(classify_pci("0x020700", false, false) == pci_kind::nic);     // InfiniBand
  CHECK(classify_pci("0x020000", false, false) == pci_kind::nic);     // Ethernet
  CHECK(classify_pci("0x02", false, false) == pci_kind::nic);         // what NCCL writes unread
  CHECK(classify_pci("0x120000", false, true) == pci_kind::nic);      // a <nic> child wins
  CHECK(classify_pci("0x010802", false, false) == pci_kind::other);   // NVMe
}

TEST_CASE("nccl import: the platform preset follows the CPU or is marked assumed",
          "[topology][nccl]") {
  auto pick = [](const char* vendor, long family, long model) {
    return choose_platform({"x86_64", vendor, family, model});
  };
  CHECK(pick("GenuineIntel", 6, 0x2d).preset == "sandy_bridge_ep");
  CHECK(pick("GenuineIntel", 6, 0x3e).preset == "ivy_bridge_ep");
  CHECK(pick("GenuineIntel", 6, 85).preset == "skylake_sp");
  CHECK_FALSE(pick("GenuineIntel", 6, 85).assumed);
  CHECK(pick("GenuineIntel", 6, 0xc6).preset == "arrow_lake");
  CHECK(pick("AuthenticAMD", 26, 17).preset == "epyc_turin");
  CHECK_FALSE(pick("AuthenticAMD", 26, 17).assumed);
  CHECK(pick("GenuineIntel", 6, 0x8f).preset == "sapphire_rapids");
  CHECK_FALSE(pick("GenuineIntel", 6, 0x8f).assumed);
  CHECK(pick("GenuineIntel", 6, 0xad).preset == "granite_rapids");
  CHECK(pick("GenuineIntel", 6, 0xae).preset == "granite_rapids");
  CHECK(pick("AuthenticAMD", 0x19, 0x11).preset == "epyc_genoa");
  CHECK(pick("AuthenticAMD", 0x19, 0xa0).preset == "epyc_genoa");
  CHECK(pick("AuthenticAMD", 0x19, 0x01).preset == "epyc_milan");
  CHECK_FALSE(pick("AuthenticAMD", 0x19, 0x01).assumed);
  // Ice Lake-SP (0x6a) has no preset of its own.
  platform_choice icx = pick("GenuineIntel", 6, 0x6a);
  CHECK(icx.preset == "skylake_sp");
  CHECK(icx.assumed);
  CHECK_THAT(icx.why, Contains("model 0x6a"));
  // A Zen 3 client part (Vermeer, 0x21) is no EPYC 7003; Rome (0x17) has no preset.
  CHECK(pick("AuthenticAMD", 0x19, 0x21).preset == "epyc_turin");
  CHECK(pick("AuthenticAMD", 0x19, 0x21).assumed);
  CHECK(pick("AuthenticAMD", 23, 49).preset == "epyc_turin");
  CHECK(pick("AuthenticAMD", 23, 49).assumed);
  CHECK(choose_platform({"arm64", "", {}, {}}).assumed);
  CHECK(choose_platform({}).preset == "skylake_sp");
  // Every preset the import may name is one the CLI finds.
  for (const char* p :
       {"sandy_bridge_ep", "ivy_bridge_ep", "skylake_sp", "sapphire_rapids", "emerald_rapids",
        "granite_rapids", "arrow_lake", "epyc_milan", "epyc_genoa", "epyc_turin"})
    CHECK(load_platform(k_platforms[0] + "/" + p + ".yaml").name == p);
}

TEST_CASE("nccl import: GPU and NIC under one switch are PIX", "[topology][nccl]") {
  imported m = import_file("pix_switch.xml");
  REQUIRE(m.t.switches.size() == 1);
  REQUIRE(m.t.devices.size() == 2);  // the NIC's two functions are one device on one link
  CHECK(m.t.find_device("gpu0")->kind().name() == "gpu");
  CHECK(m.t.find_device("nic0")->kind().name() == "dma_engine");
  CHECK(m.t.link_above("sw0")->up == "cpu0");
  CHECK(m.t.link_above("gpu0")->up == "sw0");
  CHECK(m.t.link_above("nic0")->up == "sw0");
  CHECK(m.t.link_above("nic0")->gen == 3);
  CHECK(m.t.sockets[0].platform_name == "skylake_sp");
  CHECK(m.path("gpu0", "nic0") == path_type::PIX);
  // 0x1db4 (a V100) has no device preset: the default GPU, said so.
  REQUIRE(m.result.warnings.size() == 1);
  CHECK_THAT(m.result.warnings[0],
             Contains("pix_switch.xml:7:7: warning: device: no device preset for the GPU at "
                      "0000:1a:00.0 (0x10de:0x1db4): it gets p2psim's default GPU"));
  CHECK_THAT(m.result.yaml, Contains("# 0000:1a:00.0 (0x10de:0x1db4); ASSUMED default GPU"));
  CHECK_THAT(m.result.yaml, Contains("0000:1b:00.0 (0x15b3:0x1017) mlx5_0; function 0000:1b:00.1"));
  CHECK_THAT(m.result.yaml,
             Contains("platform skylake_sp (GenuineIntel family 0x6 model 0x55: Skylake-SP"));
}

TEST_CASE("nccl import: GPU and NIC directly under a cpu are on root ports (PHB)",
          "[topology][nccl]") {
  imported m = import_file("phb_root_ports.xml");
  CHECK(m.t.switches.empty());
  CHECK(m.t.link_above("gpu0")->up == "cpu0");
  CHECK(m.t.link_above("nic0")->up == "cpu0");
  CHECK(m.path("gpu0", "nic0") == path_type::PHB);
  // Ice Lake has no preset: skylake_sp is assumed, and said so; its Gen3 root ports bound the
  // Gen4 links, with the reason next to each and a warning naming the element.
  CHECK_THAT(m.result.yaml, Contains("ASSUMED: no preset for GenuineIntel family 0x6 model 0x6a"));
  CHECK(m.t.link_above("gpu0")->gen == 3);
  CHECK_THAT(m.result.yaml, Contains("NCCL: 16.0 GT/s PCIe (Gen4); skylake_sp root ports go up"));
  REQUIRE(m.result.warnings.size() == 3);
  CHECK_THAT(m.result.warnings[0],
             Contains("phb_root_ports.xml:5:3: warning: platform: cpu0: platform skylake_sp "
                      "ASSUMED: no preset for GenuineIntel family 0x6 model 0x6a"));
  CHECK_THAT(m.result.warnings[1], Contains("phb_root_ports.xml:6:5: warning: link_speed: Gen4"));
  // The NVMe drive is neither GPU nor NIC: left out, and listed.
  CHECK_THAT(m.result.yaml, Contains("# Not imported: 0000:65:00.0 (line 14): class 0x010802"));
}

TEST_CASE("nccl import: two cpus are sockets joined by an interconnect (SYS)", "[topology][nccl]") {
  imported m = import_file("sys_two_sockets.xml");
  REQUIRE(m.t.sockets.size() == 2);
  REQUIRE(m.t.interconnects.size() == 1);
  CHECK(m.t.interconnects[0].name == "xgmi0");
  CHECK(m.t.sockets[0].platform_name == "epyc_milan");  // family 0x19 model 0x1
  CHECK_THAT(m.result.yaml, Contains("platform epyc_milan (AuthenticAMD family 0x19 model 0x1: "
                                     "EPYC 7003 (Milan)"));
  // cpu0 is numaid 0 although the file lists it second; gpu0 is the lower bus ID.
  CHECK(m.t.link_above("gpu0")->up == "cpu0");
  CHECK_THAT(line_with(m.result.yaml, "name: gpu0"),
             EndsWith("# 0000:21:00.0 (0x10de:0x20b5); ASSUMED default GPU: no device preset "
                      "for its ID"));
  CHECK(m.t.link_above("gpu1")->up == "cpu1");
  CHECK(m.t.link_above("nic0")->up == "cpu1");
  CHECK(m.t.link_above("nic0")->gen == 4);  // Milan's root ports are Gen4
  CHECK(m.path("gpu0", "nic0") == path_type::SYS);
  CHECK(m.path("gpu1", "nic0") == path_type::PHB);
  // Each GPU's fallback is a warning (0x20b5, an A100 80GB PCIe, has no device preset); the
  // sockets' platform is no assumption.
  REQUIRE(m.result.warnings.size() == 2);
  for (const auto& w : m.result.warnings)
    CHECK_THAT(w, Contains("no device preset for the GPU at"));
}

TEST_CASE("nccl import: a synthetic bridge is a switch and a bridge below it another (PXB)",
          "[topology][nccl]") {
  imported m = import_file("pxb_synthetic.xml");
  REQUIRE(m.t.switches.size() == 2);
  CHECK(m.t.link_above("sw0")->up == "cpu0");
  CHECK(m.t.link_above("sw1")->up == "sw0");
  CHECK(m.t.link_above("gpu0")->up == "sw1");
  CHECK(m.t.link_above("nic0")->up == "sw0");
  CHECK(m.path("gpu0", "nic0") == path_type::PXB);
  CHECK(m.path("gpu0", "gpu1") == path_type::PIX);
  CHECK_THAT(line_with(m.result.yaml, "{name: sw0}"), Contains("# ffff:ff:01.0 (synthetic"));
}

TEST_CASE("nccl import: explicit downstream ports belong to the switch above them",
          "[topology][nccl]") {
  // The sysfs layout: upstream port 10:00.0, its ports on the next bus (11:xx.0); a bridge
  // below a port (14:00.0) is a second switch.
  imported m = import_text(in_cpu(R"(
    <pci busid="0000:10:00.0" class="0x060400" link_speed="16 GT/s" link_width="16">
      <pci busid="0000:11:00.0" class="0x060400" link_speed="16 GT/s" link_width="16">
        <pci busid="0000:12:00.0" class="0x030200" link_speed="8 GT/s" link_width="16"/>
      </pci>
      <pci busid="0000:11:01.0" class="0x060400">
        <pci busid="0000:13:00.0" class="0x020700" link_speed="8 GT/s" link_width="8"/>
      </pci>
      <pci busid="0000:11:02.0" class="0x060400">
        <pci busid="0000:14:00.0" class="0x060400" link_speed="8 GT/s" link_width="16">
          <pci busid="0000:16:00.0" class="0x030200" link_speed="8 GT/s" link_width="16"/>
        </pci>
      </pci>
    </pci>
)"));
  REQUIRE(m.t.switches.size() == 2);
  CHECK(m.t.link_above("gpu0")->up == "sw0");
  CHECK(m.t.link_above("nic0")->up == "sw0");
  CHECK(m.t.link_above("nic0")->width == 8);
  CHECK(m.t.link_above("sw1")->up == "sw0");
  CHECK(m.path("gpu0", "nic0") == path_type::PIX);
  CHECK(m.path("gpu1", "nic0") == path_type::PXB);
}

TEST_CASE("nccl import: three sockets are joined pairwise", "[topology][nccl]") {
  imported m = import_text(R"(<system version="1">
  <cpu numaid="0" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="62"/>
  <cpu numaid="1" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="62"/>
  <cpu numaid="2" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="62"/>
</system>)");
  CHECK(m.t.sockets.size() == 3);
  REQUIRE(m.t.interconnects.size() == 3);
  CHECK(m.t.interconnects[2].name == "qpi2");
  CHECK(m.t.sockets[2].platform_name == "ivy_bridge_ep");
}

// docs/formats-topology.md, "Mixed platforms": the loader refuses sockets of different presets
// unless the file says so; an import whose CPUs map to two presets says so, and warns.
TEST_CASE("nccl import: CPUs of different presets are written as mixed platforms",
          "[topology][nccl][platform]") {
  imported m = import_text(R"(<system version="1">
  <cpu numaid="0" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="85"/>
  <cpu numaid="1" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="45"/>
</system>)");
  CHECK(m.t.mixed_platforms);
  CHECK(m.t.sockets[0].platform_name == "skylake_sp");
  CHECK(m.t.sockets[1].platform_name == "sandy_bridge_ep");
  CHECK_THAT(m.result.yaml, Contains("mixed_platforms: true"));
  REQUIRE(m.result.warnings.size() == 1);
  CHECK_THAT(m.result.warnings[0],
             Contains("inline.xml:3:3: warning: platform: this <cpu> maps to platform "
                      "sandy_bridge_ep and the first to skylake_sp"));
  // Sandy Bridge-EP's cross-socket P2P cap now holds on both sockets.
  CHECK(m.t.sockets[0].platform.interconnect_p2p_write.bandwidth_gbs == Approx(0.25));
}

TEST_CASE("nccl import: bad files name file line and column", "[topology][nccl][bad]") {
  // The malformed files live with the other malformed inputs.
  const std::string bad = "../../corpus/bad/";
  config::error e = file_error_of(bad + "nccl_not_xml.xml");
  CHECK_THAT(e.what(), Contains("nccl_not_xml.xml:5:"));
  CHECK(e.key == "XML");
  e = file_error_of(bad + "nccl_no_system.xml");
  CHECK_THAT(e.what(), Contains("nccl_no_system.xml:3:1: error: "));
  CHECK_THAT(e.message, Contains("got <topology>"));
  e = file_error_of(bad + "nccl_link_speed_not_numeric.xml");
  CHECK_THAT(e.what(),
             Contains("nccl_link_speed_not_numeric.xml:4:5: error: link_speed: 'fast' is not"));
  e = file_error_of(bad + "nccl_unknown_class.xml");
  CHECK_THAT(e.what(), Contains("nccl_unknown_class.xml:4:5: error: class: '0x088000'"));
  e = file_error_of("no_such_file.xml");
  CHECK_THAT(e.what(), Contains("no such file"));
}

TEST_CASE("nccl import: missing or unusable link attributes are errors", "[topology][nccl][bad]") {
  config::error e =
      error_of(in_cpu("    <pci busid=\"0000:1a:00.0\" class=\"0x030200\" link_width=\"16\"/>\n"));
  CHECK_THAT(e.what(), Contains("inline.xml:3:5: error: link_speed: missing"));
  e =
      error_of(in_cpu("    <pci busid=\"0000:1a:00.0\" class=\"0x030200\" "
                      "link_speed=\"64.0 GT/s PCIe\" link_width=\"16\"/>\n"));
  CHECK_THAT(e.message, Contains("Gen6"));
  e =
      error_of(in_cpu("    <pci busid=\"0000:1a:00.0\" class=\"0x030200\" link_speed=\"8 GT/s\" "
                      "link_width=\"3\"/>\n"));
  CHECK(e.key == "link_width");
  e = error_of(
      in_cpu("    <pci busid=\"0000:1a:00.0\" class=\"0x030200\" link_speed=\"8 GT/s\"/>\n"));
  CHECK_THAT(e.what(), Contains(":3:5: error: link_width: missing"));
}

namespace {
// A GPU (an H100 PCIe, which has a device preset) on a root port of one cpu, its link as NCCL
// wrote it.
std::string gpu_on_root_port(std::string_view speed, std::string_view width) {
  return in_cpu(
      fmt::format("    <pci busid=\"0000:1a:00.0\" class=\"0x030200\" vendor=\"0x10de\" "
                  "device=\"0x2331\" link_speed=\"{}\" link_width=\"{}\"/>\n",
                  speed, width));
}
}  // namespace

// What a VM's sysfs does not know, NCCL assumes (src/graph/topo.cc, ncclTopoAddPci: width 0 is
// x16; a rate not in kvDictPciGen is 8 GT/s): the import takes the same values, and says so on
// standard error and beside the link.
TEST_CASE("nccl import: unknown link width and speed take NCCL's values, with a warning",
          "[topology][nccl]") {
  for (const char* width : {"0", ""}) {
    INFO("link_width '" << width << "'");
    imported m = import_text(gpu_on_root_port("8 GT/s", width));
    CHECK(m.t.link_above("gpu0")->width == 16);
    REQUIRE(m.result.warnings.size() == 1);
    CHECK_THAT(m.result.warnings[0],
               Contains(fmt::format("inline.xml:3:5: warning: link_width: '{}' gives no width: "
                                    "x16, as NCCL assumes",
                                    width)));
    CHECK_THAT(line_with(m.result.yaml, "down: gpu0"),
               Contains(fmt::format("# link_width '{}' unknown, x16 as NCCL assumes", width)));
  }
  for (const char* speed : {"", "Unknown", "unknown"}) {
    INFO("link_speed '" << speed << "'");
    imported m = import_text(gpu_on_root_port(speed, "8"));
    CHECK(m.t.link_above("gpu0")->gen == 3);
    CHECK(m.t.link_above("gpu0")->width == 8);
    REQUIRE(m.result.warnings.size() == 1);
    CHECK_THAT(m.result.warnings[0],
               Contains(fmt::format("inline.xml:3:5: warning: link_speed: '{}' gives no rate: "
                                    "Gen3 (8 GT/s), as NCCL assumes",
                                    speed)));
  }
  imported vm = import_file("unknown_speed_vm.xml");  // below a switch: 'Unknown' on Gen3
  CHECK(vm.t.link_above("gpu0")->gen == 3);
}

// NVLink is not modelled: each <nvlink> of a GPU is a warning naming the GPU and its peer (or
// NVSwitch), and the file's header says so, so no NVLink machine imports silently as PCIe only.
TEST_CASE("nccl import: NVLinks are warned of, not dropped silently", "[topology][nccl]") {
  imported m = import_text(
      in_cpu("    <pci busid=\"0000:1a:00.0\" class=\"0x030200\" link_speed=\"16 GT/s\" "
             "link_width=\"16\">\n"
             "      <gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\">\n"
             "        <nvlink target=\"0000:07:00.0\" count=\"18\" tclass=\"0x068000\"/>\n"
             "      </gpu>\n"
             "    </pci>\n"
             "    <pci busid=\"0000:1b:00.0\" class=\"0x030200\" link_speed=\"16 GT/s\" "
             "link_width=\"16\">\n"
             "      <gpu dev=\"1\" sm=\"80\" rank=\"1\" gdr=\"1\">\n"
             "        <nvlink target=\"0000:1a:00.0\" count=\"4\" tclass=\"0x030200\"/>\n"
             "      </gpu>\n"
             "    </pci>\n"));
  CHECK(m.t.devices.size() == 2);
  CHECK_THAT(m.result.yaml, Contains("# NVLink connections are not imported"));
  std::vector<std::string> nvlink;
  for (const auto& w : m.result.warnings)
    if (w.find("warning: nvlink:") != std::string::npos) nvlink.push_back(w);
  REQUIRE(nvlink.size() == 2);
  CHECK_THAT(nvlink[0], Contains("inline.xml:5:9: warning: nvlink: 18 NVLink(s) of the GPU at "
                                 "0000:1a:00.0 to 0000:07:00.0 (an NVSwitch) not imported"));
  CHECK_THAT(nvlink[1], Contains("inline.xml:10:9: warning: nvlink: 4 NVLink(s) of the GPU at "
                                 "0000:1b:00.0 to 0000:1a:00.0 not imported"));
}

// A dump NCCL 2.28.9 wrote on a cloud VM with an H200 (tests/data/hw_probe/README.md): the
// port above the GPU has no max_link_width in the VM's sysfs (link_width="0"), the CPU's NUMA
// node is unknown (numaid="-1"), the NIC is virtual (a <nic> with no PCI device). The CPU
// (Intel family 6 model 0xcf) is Emerald Rapids, whose preset keeps the Gen5 link.
TEST_CASE("nccl import: a real dump from an H200 VM", "[topology][nccl]") {
  imported m = import_file("h200_vm_nccl2.28.9.xml");
  REQUIRE(m.t.sockets.size() == 1);
  CHECK(m.t.sockets[0].platform_name == "emerald_rapids");
  CHECK_THAT(m.result.yaml, Contains("Intel family 0x6 model 0xcf: Emerald Rapids"));
  REQUIRE(m.t.devices.size() == 1);
  CHECK(m.t.devices[0].name == "gpu0");
  CHECK(m.t.link_above("gpu0")->width == 16);
  CHECK(m.t.link_above("gpu0")->gen == 5);
  CHECK_THAT(m.result.yaml, Contains("# Not imported: line 6: a <nic> with no PCI device"));
  CHECK_THAT(m.result.yaml, Contains("# numaid -1"));
  REQUIRE(m.result.warnings.size() == 1);  // the width alone was assumed
  CHECK_THAT(m.result.warnings[0], Contains("h200_vm_nccl2.28.9.xml:3:5: warning: link_width: "
                                            "'0' gives no width: x16, as NCCL assumes"));
  // Its PCI device ID, 0x2335, is the h200 preset's: BAR1 and VRAM as the VM's nvidia-smi -q.
  CHECK(m.t.devices[0].model == "h200");
  CHECK_THAT(line_with(m.result.yaml, "name: gpu0"), Contains("model: h200}"));
  const auto* gpu = m.t.devices[0].spec<gpu::gpu_spec>();
  REQUIRE(gpu);
  CHECK(gpu->bar1_bytes == 256ull << 30);
  CHECK(gpu->vram_bytes == 143771ull << 20);
}

// The same kind of VM with two H200s joined through an NVSwitch (18 NVLinks each): both GPUs
// on root ports of the one socket, so PHB over PCIe; each NVLink a warning.
TEST_CASE("nccl import: a real dump from a two-H200 VM with an NVSwitch", "[topology][nccl]") {
  imported m = import_file("h200x2_vm_nvswitch_nccl2.28.9.xml");
  REQUIRE(m.t.devices.size() == 2);
  CHECK(m.t.link_above("gpu0")->up == "cpu0");
  CHECK(m.t.link_above("gpu1")->up == "cpu0");
  CHECK(m.path("gpu0", "gpu1") == path_type::PHB);
  CHECK_THAT(m.result.yaml, Contains("# NVLink connections are not imported"));
  int nvlinks = 0;
  for (const auto& w : m.result.warnings)
    if (w.find("warning: nvlink: 18 NVLink(s) of the GPU at 0000:00:0") != std::string::npos &&
        w.find("to fffffff:ff:ff.0 (an NVSwitch) not imported") != std::string::npos)
      ++nvlinks;
  CHECK(nvlinks == 2);
}

TEST_CASE("nccl import: malformed cpus and bus IDs are errors", "[topology][nccl][bad]") {
  CHECK_THAT(error_of("<system/>").message, Contains("no <cpu>"));
  CHECK_THAT(error_of("").what(), Contains("inline.xml"));
  config::error e = error_of("<system>\n  <cpu arch=\"x86_64\"/>\n</system>");
  CHECK_THAT(e.what(), Contains("inline.xml:2:3: error: numaid: missing"));
  e = error_of("<system>\n  <cpu numaid=\"0\"/>\n  <cpu numaid=\"0\"/>\n</system>");
  CHECK_THAT(e.what(), Contains(":3:3: error: numaid: 0 appears twice (first at line 2)"));
  e = error_of(in_cpu("    <pci busid=\"17:00.0\" class=\"0x030200\"/>\n"));
  CHECK_THAT(e.what(), Contains(":3:5: error: busid: '17:00.0' is not a PCI address"));
  e = error_of(
      in_cpu("    <pci busid=\"0000:17:00.0\" link_speed=\"8 GT/s\" link_width=\"16\"/>\n"));
  CHECK(e.key == "class");
  e =
      error_of(in_cpu("    <pci busid=\"0000:17:00.0\" class=\"0x030200\" link_speed=\"8 GT/s\" "
                      "link_width=\"16\"/>\n"
                      "    <pci busid=\"0000:17:00.0\" class=\"0x020700\" link_speed=\"8 GT/s\" "
                      "link_width=\"16\"/>\n"));
  CHECK_THAT(e.what(),
             Contains(":4:5: error: busid: '0000:17:00.0' appears twice (first at line 3)"));
}

// A NIC whose PCI ID a NIC preset holds takes it (its MRRS and tags); one no preset holds
// stays p2psim's DMA engine. A GPU preset's ID on a NIC is not taken (the types differ).
TEST_CASE("nccl import: a NIC's device ID picks its preset", "[topology][nccl]") {
  const std::string nic = R"(
    <pci busid="0000:4b:00.0" class="0x020000" vendor="0x15b3" device="DEVICE" link_speed="8.0 GT/s PCIe" link_width="16">
      <nic><net name="mlx5_0" dev="0" speed="400000" port="1" gdr="1"/></nic>
    </pci>)";
  auto machine = [&](const std::string& device) {
    std::string n = nic;
    n.replace(n.find("DEVICE"), 6, device);
    return R"(<system version="1">
  <cpu numaid="0" affinity="ffffffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="85">)" +
           n + "\n  </cpu>\n</system>\n";
  };
  imported m = import_text(machine("0x1021"));
  REQUIRE(m.t.devices.size() == 1);
  CHECK(m.t.devices[0].model == "connectx7");
  CHECK_THAT(line_with(m.result.yaml, "name: nic0"),
             Contains("type: dma_engine, model: connectx7}"));
  CHECK(m.t.devices[0].control.mrrs == 512);
  m = import_text(machine("0x101b"));  // a ConnectX-6: no preset
  CHECK(m.t.devices[0].model.empty());
  CHECK(m.result.warnings.empty());
  m = import_text(machine("0x2335"));  // the H200's device ID, with Mellanox's vendor ID
  CHECK(m.t.devices[0].model.empty());
}
