// NCCL's topology XML (what NCCL_TOPO_DUMP_FILE writes, or an NCCL_TOPO_FILE such as a cloud
// provider ships) -> the text of a p2psim topology YAML file. `p2psim topo --import-nccl`.
//
// The mapping is in docs/formats-topology.md, "Importing from NCCL". In short: each <cpu> is a
// socket; each PCI bridge element is a PCIe switch (NCCL leaves out the switches' downstream
// ports, so a bridge below a bridge is the next switch down, except a child whose bus number
// says it is a downstream port of its parent); 3D controllers and GPUs are `gpu` devices;
// network controllers and NICs are `dma_engine` devices; link_speed/link_width become each
// link's gen and width.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace p2psim::topo {

struct nccl_import_options {
  // Where the platform presets are looked for, to know how fast each chosen preset's root ports
  // go. A root-port link NCCL reports faster than that is written at the preset's max_gen, with
  // a comment and a warning, so the file loads. Empty: presets are not read, nothing is lowered.
  std::vector<std::string> platform_dirs;
};

struct nccl_import_result {
  std::string yaml;                   // the topology file's text
  std::vector<std::string> warnings;  // "FILE:LINE:COL: warning: ..." (also as comments)
};

// Throws config::error (file:line:col of the offending element) on bad input.
nccl_import_result import_nccl_xml(std::string_view xml, const std::string& file,
                                   const nccl_import_options& options = {});
nccl_import_result import_nccl_file(const std::string& path,
                                    const nccl_import_options& options = {});

// ---- the mapping rules, for tests ---------------------------------------------------------

// Linux's max_link_speed text ("8 GT/s", "16.0 GT/s PCIe", "2.5 GT/s") -> PCIe generation
// 1..6; nullopt when it is not one of the PCIe rates (empty, "Unknown", "10 GT/s").
std::optional<int> pcie_gen_of_speed(std::string_view link_speed);

// A link_speed or link_width the machine did not know: empty, "0", "Unknown" (any case), as
// sysfs reads in many VMs. NCCL then assumes 8 GT/s per lane (src/graph/topo.cc, kvDictPciGen's
// fallback) and x16 (ncclTopoAddPci: "if (width == 0) width = 16"), and so does the import.
bool is_unknown_link_value(std::string_view value);
inline constexpr int nccl_unknown_speed_gen = 3;
inline constexpr long nccl_unknown_width = 16;

struct pci_busid {
  uint32_t domain = 0, bus = 0, device = 0, function = 0;
  auto operator<=>(const pci_busid&) const = default;
};
// "0000:17:00.0" (domain of 4 to 8 hex digits) -> its parts; nullopt if malformed.
std::optional<pci_busid> parse_busid(std::string_view text);
// "ffff:ff:01.0": a bridge NCCL topology files made up for switches hidden from a VM.
bool is_synthetic_busid(std::string_view busid);

enum class pci_kind { bridge, gpu, nic, other };
// From the class attribute and whether the element has a <gpu> or <nic> child.
pci_kind classify_pci(std::string_view pci_class, bool has_gpu_child, bool has_nic_child);

// Which preset models a <cpu>: NCCL's arch, vendor, familyid and modelid attributes.
struct cpu_identity {
  std::string arch, vendor;
  std::optional<long> family, model;
};
struct platform_choice {
  std::string preset;  // a file stem in topologies/platforms
  std::string why;     // for the YAML comment: what matched, or what was assumed
  bool assumed = false;
};
platform_choice choose_platform(const cpu_identity& cpu);

}  // namespace p2psim::topo
