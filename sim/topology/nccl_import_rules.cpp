// The small mapping rules of the NCCL import: link speeds, bus IDs, PCI classes, which platform
// preset models a CPU. The tree walk and the YAML writing are in nccl_import.cpp.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "sim/topology/nccl_import.h"

namespace p2psim::topo {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A hex field of 1..max_digits digits, the whole of `s`.
std::optional<uint32_t> hex_field(std::string_view s, size_t max_digits) {
  if (s.empty() || s.size() > max_digits) return std::nullopt;
  uint32_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<int> pcie_gen_of_speed(std::string_view link_speed) {
  // Linux writes max_link_speed as "8 GT/s" up to kernel 5.6 and "8.0 GT/s PCIe" since; NCCL
  // copies the text. Anything else (empty, "Unknown" in some VMs) has no generation to give.
  std::string_view s = trim(link_speed);
  double rate = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), rate);
  if (ec != std::errc() || p == s.data()) return std::nullopt;
  std::string_view unit = trim(s.substr(size_t(p - s.data())));
  if (unit != "GT/s" && unit != "GT/s PCIe") return std::nullopt;
  static constexpr std::pair<double, int> k_rates[] = {{2.5, 1}, {5, 2},  {8, 3},
                                                       {16, 4},  {32, 5}, {64, 6}};
  for (auto [r, gen] : k_rates)
    if (rate == r) return gen;
  return std::nullopt;
}

bool is_unknown_link_value(std::string_view value) {
  std::string_view s = trim(value);
  if (s.empty() || s == "0") return true;
  static constexpr std::string_view k_unknown = "unknown";
  return s.size() == k_unknown.size() &&
         std::equal(s.begin(), s.end(), k_unknown.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == b;
         });
}

std::optional<pci_busid> parse_busid(std::string_view text) {
  // DOMAIN:BUS:DEVICE.FUNCTION; NVML writes 8-digit domains, sysfs 4.
  std::string_view s = trim(text);
  size_t c1 = s.find(':'), c2 = s.rfind(':'), dot = s.rfind('.');
  if (c1 == std::string_view::npos || c1 == c2 || dot == std::string_view::npos || dot < c2)
    return std::nullopt;
  auto domain = hex_field(s.substr(0, c1), 8);
  auto bus = hex_field(s.substr(c1 + 1, c2 - c1 - 1), 2);
  auto dev = hex_field(s.substr(c2 + 1, dot - c2 - 1), 2);
  auto fn = hex_field(s.substr(dot + 1), 1);
  if (!domain || !bus || !dev || !fn || *dev > 31 || *fn > 7) return std::nullopt;
  return pci_busid{*domain, *bus, *dev, *fn};
}

bool is_synthetic_busid(std::string_view busid) {
  // No real host bridge numbers a bus ff in domain ffff; topology files written for VMs (whose
  // real switches the hypervisor hides) use it for the switches they describe.
  return lower(trim(busid)).starts_with("ffff:ff:");
}

pci_kind classify_pci(std::string_view pci_class, bool has_gpu_child, bool has_nic_child) {
  // NCCL matches class prefixes too, and itself writes a bare "0x02" for a NIC whose class
  // it could not read. A <nic> child makes any element a NIC, as in NCCL.
  const std::string c = lower(trim(pci_class));
  if (has_nic_child) return pci_kind::nic;
  if (c.starts_with("0x0604")) return pci_kind::bridge;
  // 0x0302 is a 3D controller (compute GPUs); a VGA controller (0x0300) may be a display
  // adapter such as a BMC's, so it counts only with the <gpu> element NCCL adds for GPUs.
  if (c.starts_with("0x0302") || (c.starts_with("0x03") && has_gpu_child)) return pci_kind::gpu;
  if (c.starts_with("0x02")) return pci_kind::nic;  // Ethernet 0x0200, InfiniBand 0x0207
  return pci_kind::other;
}

platform_choice choose_platform(const cpu_identity& cpu) {
  // The presets in topologies/platforms, matched by CPUID family and model as NCCL records
  // them. Nothing matching: skylake_sp, what topologies/cross_qpi.yaml uses.
  const std::string fallback = "skylake_sp";
  const std::string k_default = "skylake_sp is the default (as in topologies/cross_qpi.yaml)";
  auto id = [&] {
    return fmt::format("{} family {:#x} model {:#x}", cpu.vendor, cpu.family.value_or(0),
                       cpu.model.value_or(0));
  };
  if (cpu.arch.empty() && cpu.vendor.empty())
    return {fallback, "the <cpu> has no arch or vendor; " + k_default, true};
  if (!cpu.arch.empty() && cpu.arch != "x86_64")
    return {fallback, fmt::format("no preset for {} CPUs; {}", cpu.arch, k_default), true};
  if (cpu.vendor == "GenuineIntel" && cpu.family == 6 && cpu.model) {
    switch (*cpu.model) {
      case 0x2d:
        return {"sandy_bridge_ep", id() + ": Sandy Bridge-EP", false};
      case 0x3e:
        return {"ivy_bridge_ep", id() + ": Ivy Bridge-EP", false};
      case 0x55:
        return {"skylake_sp", id() + ": Skylake-SP / Cascade Lake", false};
      case 0x8f:
        return {"sapphire_rapids", id() + ": Sapphire Rapids", false};
      case 0xad:
      case 0xae:
        return {"granite_rapids", id() + ": Granite Rapids", false};
      case 0xcf:
        return {"emerald_rapids", id() + ": Emerald Rapids", false};
      case 0xc5:
      case 0xc6:
        return {"arrow_lake", id() + ": Arrow Lake", false};
      default:
        break;
    }
    return {fallback, "no preset for " + id() + "; " + k_default, true};
  }
  if (cpu.vendor == "AuthenticAMD") {
    const long model = cpu.model.value_or(-1);
    if (cpu.family == 0x1a) return {"epyc_turin", id() + ": EPYC 9005 (Turin)", false};
    if (cpu.family == 0x19 && model >= 0x10 && model <= 0x1f)
      return {"epyc_genoa", id() + ": EPYC 9004 (Genoa)", false};
    if (cpu.family == 0x19 && model >= 0xa0 && model <= 0xaf)
      return {"epyc_genoa", id() + ": EPYC 9004 (Bergamo)", false};
    if (cpu.family == 0x19 && model >= 0x00 && model <= 0x0f)
      return {"epyc_milan", id() + ": EPYC 7003 (Milan)", false};
    // Every AMD server root complex since family 0x17 routes P2P at full size (Linux's p2pdma
    // list), which an EPYC preset models better than an Intel one.
    return {"epyc_turin", "no preset for " + id() + "; epyc_turin is the newest AMD one", true};
  }
  return {fallback, "no preset for " + id() + "; " + k_default, true};
}

}  // namespace p2psim::topo
