// NCCL topology XML -> p2psim topology YAML: the walk over <system>/<cpu>/<pci>. The rules it
// applies to single values are in nccl_import_rules.cpp, the writing in nccl_import_yaml.cpp.
#include "sim/topology/nccl_import.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pugixml.hpp>

#include "sim/config/error.h"
#include "sim/config/text.h"
#include "sim/topology/device_presets.h"
#include "sim/topology/nccl_import_detail.h"
#include "sim/topology/topology_loader.h"

namespace p2psim::topo {

namespace {

namespace fs = std::filesystem;
using namespace detail;

std::optional<long> to_long(const char* s) {
  std::string_view v(s);
  long out = 0;
  int base = 10;
  if (v.starts_with("0x") || v.starts_with("0X")) v.remove_prefix(2), base = 16;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out, base);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size()) return std::nullopt;
  return out;
}

class importer {
 public:
  importer(std::string_view text, std::string file, const nccl_import_options& options)
      : m_text(text), m_file(std::move(file)), m_options(options) {
    m_tree.file = m_file;
    m_line_starts.push_back(0);
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') m_line_starts.push_back(i + 1);
  }

  nccl_import_result run() {
    // pugixml takes any bytes; names and IDs from the file end up in the YAML's comments.
    config::check_text(m_text, m_file, "XML");
    pugi::xml_document doc;
    pugi::xml_parse_result parsed =
        doc.load_buffer(m_text.data(), m_text.size(), pugi::parse_default, pugi::encoding_utf8);
    if (!parsed)
      throw config::error(at(parsed.offset), "XML",
                          fmt::format("not an NCCL topology file: {}", parsed.description()));
    pugi::xml_node system = doc.document_element();
    if (std::string_view(system.name()) != "system")
      fail(system, "",
           fmt::format("expected <system> as the top element (an NCCL topology "
                       "file, as NCCL_TOPO_DUMP_FILE writes), got <{}>",
                       system.name()));
    std::vector<std::pair<long, pugi::xml_node>> cpus;
    for (pugi::xml_node cpu : system.children("cpu")) {
      pugi::xml_attribute a = cpu.attribute("numaid");
      if (!a) fail(cpu, "numaid", "missing; each <cpu> is one NUMA node");
      auto numa = to_long(a.value());
      if (!numa) fail(cpu, "numaid", fmt::format("expected an integer, got '{}'", a.value()));
      for (const auto& [n, other] : cpus)
        if (n == *numa)
          fail(cpu, "numaid", fmt::format("{} appears twice (first at {})", n, where(other)));
      cpus.emplace_back(*numa, cpu);
    }
    if (cpus.empty()) fail(system, "", "no <cpu> element: nothing to import");
    std::stable_sort(cpus.begin(), cpus.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [numa, cpu] : cpus) add_socket(numa, cpu);
    for (size_t s = 0; s < cpus.size(); ++s) walk_cpu(cpus[s].second, s);
    // CPUs of different presets: a real machine pairs identical CPUs, so one of the
    // identities is likely off; written as the dump says, with the loader's stricter rule
    // (docs/formats-topology.md, "Mixed platforms") and a warning.
    for (size_t s = 1; s < cpus.size(); ++s)
      if (m_tree.entities[m_tree.sockets[s]].platform !=
          m_tree.entities[m_tree.sockets[0]].platform) {
        m_tree.mixed_platforms = true;
        warn(cpus[s].second, "platform",
             fmt::format("this <cpu> maps to platform {} and the first to {}: written with "
                         "`mixed_platforms: true`, so P2P across sockets takes the stricter "
                         "policy of the two",
                         m_tree.entities[m_tree.sockets[s]].platform,
                         m_tree.entities[m_tree.sockets[0]].platform));
        break;
      }
    name_entities();
    return {write_nccl_yaml(m_tree), m_warnings};
  }

 private:
  config::source_loc at(ptrdiff_t offset) const {
    if (offset < 0) return {m_file, 0, 0};
    auto it = std::upper_bound(m_line_starts.begin(), m_line_starts.end(), size_t(offset));
    size_t line = size_t(it - m_line_starts.begin());
    return {m_file, int(line), int(size_t(offset) - m_line_starts[line - 1] + 1)};
  }
  // pugixml gives an element's offset at its name; errors point at its '<'.
  config::source_loc loc(pugi::xml_node n) const {
    ptrdiff_t off = n.offset_debug();
    if (off > 0 && m_text[size_t(off) - 1] == '<') --off;
    return at(off);
  }
  std::string where(pugi::xml_node n) const {
    config::source_loc l = loc(n);
    return fmt::format("line {}", l.line);
  }
  [[noreturn]] void fail(pugi::xml_node n, const std::string& key, const std::string& msg) const {
    throw config::error(loc(n), key, msg);
  }
  void warn(pugi::xml_node n, const std::string& key, const std::string& msg) {
    m_warnings.push_back(loc(n).str() + ": warning: " + key + ": " + msg);
  }

  void add_socket(long numa, pugi::xml_node cpu) {
    cpu_identity id{cpu.attribute("arch").value(), cpu.attribute("vendor").value(),
                    to_long(cpu.attribute("familyid").value()),
                    to_long(cpu.attribute("modelid").value())};
    platform_choice p = choose_platform(id);
    size_t s = m_tree.sockets.size();
    m_tree.sockets.push_back(
        add({nccl_kind::socket, {}, fmt::format("numaid {}", numa), p.preset, {}, {}}));
    m_tree.entities.back().name = fmt::format("cpu{}", s);
    m_tree.platform_notes.push_back(
        fmt::format("cpu{} (<cpu numaid=\"{}\">, {}): platform {}{}", s, numa, where(cpu), p.preset,
                    p.assumed ? ", ASSUMED: " + p.why : " (" + p.why + ")"));
    if (p.assumed)
      warn(cpu, "platform", fmt::format("cpu{}: platform {} ASSUMED: {}", s, p.preset, p.why));
  }

  size_t add(nccl_entity e) {
    m_tree.entities.push_back(std::move(e));
    return m_tree.entities.size() - 1;
  }

  void walk_cpu(pugi::xml_node cpu, size_t socket) {
    for (pugi::xml_node child : cpu.children()) {
      std::string_view tag = child.name();
      if (tag == "pci") walk_pci(child, m_tree.sockets[socket], {});
      if (tag == "nic")  // NCCL's place for a NIC with no PCI device (virtual, USB)
        m_tree.skipped.push_back(where(child) + ": a <nic> with no PCI device (virtual NIC)");
    }
    // NCCL records no host bridges, so all of these are root ports of one: devices 1..31 of
    // its root bus.
    if (size_t below = links_from(m_tree.sockets[socket]); below > 31)
      fail(cpu, "",
           fmt::format("{} devices and switches directly below this <cpu>: they become root ports "
                       "of one host bridge, which has at most 31",
                       below));
  }

  size_t links_from(size_t up) const {
    return size_t(std::count_if(m_tree.links.begin(), m_tree.links.end(),
                                [up](const nccl_link& l) { return l.up == up; }));
  }

  // `up`: the socket or switch the element's link comes from. `up_bridge`: the bridge element
  // `up` was made from, when that is the element's parent (to spot its downstream ports).
  // The recursion is bounded: every other level at least is a switch, whose link add_link
  // counts against the 256 bus numbers.
  void walk_pci(pugi::xml_node pci, size_t up, pugi::xml_node up_bridge) {
    const char* busid_text = pci.attribute("busid").value();
    if (!pci.attribute("busid")) fail(pci, "busid", "missing; every <pci> has its PCI address");
    std::optional<pci_busid> bus = parse_busid(busid_text);
    if (!bus)
      fail(pci, "busid", fmt::format("'{}' is not a PCI address (DDDD:BB:DD.F)", busid_text));
    if (auto [it, fresh] = m_busids.emplace(*bus, pci); !fresh)
      fail(pci, "busid",
           fmt::format("'{}' appears twice (first at {})", busid_text, where(it->second)));
    pugi::xml_attribute cls = pci.attribute("class");
    if (!cls) fail(pci, "class", "missing; the PCI class says what the element is");
    const bool gpu_child = !pci.child("gpu").empty(), nic_child = !pci.child("nic").empty();
    const pci_kind kind = classify_pci(cls.value(), gpu_child, nic_child);
    const std::string id = one_line(busid_text);

    if (kind == pci_kind::bridge) {
      if (is_downstream_port(pci, *bus, up_bridge)) {
        // The switch's own port: what is below it hangs off the same switch.
        for (pugi::xml_node child : pci.children("pci")) walk_pci(child, up, {});
        return;
      }
      std::string what = is_synthetic_busid(busid_text) ? " (synthetic: a switch NCCL's file "
                                                          "describes without its real address)"
                                                        : describe_ids(pci);
      size_t sw = add({nccl_kind::pcie_switch, *bus, id + what, {}, {}, {}});
      add_link(pci, up, sw);
      for (pugi::xml_node child : pci.children("pci")) walk_pci(child, sw, pci);
      // Downstream ports are devices 0..31 of the switch's internal bus.
      if (size_t below = links_from(sw); below > 32)
        fail(pci, "",
             fmt::format("{} devices and switches below this switch: a PCIe switch has at most "
                         "32 downstream ports",
                         below));
      return;
    }
    if (kind == pci_kind::other) {
      for (const char* tag : {"pci", "gpu", "nic"})
        if (pci.child(tag))
          fail(pci, "class",
               fmt::format("'{}' is not a PCI bridge (0x0604..), GPU (0x0302.., or 0x03.. with a "
                           "<gpu>) or network controller (0x02.., or with a <nic>), yet it has a "
                           "<{}> inside: where that sits in the PCIe tree is unknown",
                           cls.value(), tag));
      m_tree.skipped.push_back(fmt::format("{} ({}): class {}, not a bridge, GPU or NIC", id,
                                           where(pci), one_line(cls.value())));
      return;
    }
    if (kind == pci_kind::nic && merge_nic_function(pci, *bus, up, id)) return;
    for (pugi::xml_node nvlink : pci.child("gpu").children("nvlink")) {
      // Kept in the file's header and warned of: the GPU's peers on it talk over PCIe here.
      m_tree.has_nvlink = true;
      const std::string target = one_line(nvlink.attribute("target").value());
      const std::string tclass = nvlink.attribute("tclass").value();
      warn(nvlink, "nvlink",
           fmt::format("{} NVLink(s) of the GPU at {} to {}{} not imported: p2psim models PCIe "
                       "only, so traffic between them goes over PCIe in the simulation",
                       nvlink.attribute("count").as_int(1), id, target.empty() ? "?" : target,
                       std::string_view(tclass).starts_with("0x0680") ? " (an NVSwitch)" : ""));
    }
    std::string comment = id + describe_ids(pci) + net_names(pci);
    size_t dev =
        add({kind == pci_kind::gpu ? nccl_kind::gpu : nccl_kind::nic, *bus, comment, {}, {}, {}});
    choose_model(pci, dev, id, kind == pci_kind::gpu ? "gpu" : "dma_engine");
    add_link(pci, up, dev);
    for (pugi::xml_node child : pci.children("pci"))
      m_tree.skipped.push_back(where(child) + ": a <pci> inside a GPU or NIC");
  }

  // Explicit downstream ports (the sysfs layout) sit on the switch's internal bus, the bus
  // after the upstream port's. NCCL's dumps leave them out, so there a bridge below a bridge
  // is a further switch, and on a bus at least two higher.
  static bool is_downstream_port(pugi::xml_node pci, const pci_busid& bus,
                                 pugi::xml_node up_bridge) {
    if (!up_bridge || pci.parent() != up_bridge) return false;
    const char* up_id = up_bridge.attribute("busid").value();
    if (is_synthetic_busid(up_id) || is_synthetic_busid(pci.attribute("busid").value()))
      return false;
    std::optional<pci_busid> up_bus = parse_busid(up_id);
    return up_bus && up_bus->domain == bus.domain && bus.bus == up_bus->bus + 1;
  }

  // The functions of a multi-port NIC (0000:5e:00.0 and .1) share one device and one link.
  bool merge_nic_function(pugi::xml_node pci, const pci_busid& bus, size_t up,
                          const std::string& id) {
    for (const auto& l : m_tree.links) {
      nccl_entity& e = m_tree.entities[l.down];
      if (l.up == up && e.kind == nccl_kind::nic && e.bus.domain == bus.domain &&
          e.bus.bus == bus.bus && e.bus.device == bus.device) {
        e.comment += "; function " + id + net_names(pci);
        return true;
      }
    }
    return false;
  }

  // A GPU's or NIC's device preset (`type`), from its PCI vendor and device IDs
  // (topologies/devices/*.yaml, pci_ids). Without one a GPU is p2psim's default GPU, which is
  // a warning; a NIC is p2psim's DMA engine.
  void choose_model(pugi::xml_node pci, size_t dev, const std::string& id,
                    const std::string& type) {
    const std::string vendor = pci.attribute("vendor").value();
    const std::string device = pci.attribute("device").value();
    auto id16 = [](const std::string& text) -> std::optional<uint16_t> {
      size_t used = 0;
      unsigned long v = 0;
      try {
        v = std::stoul(text, &used, 16);
      } catch (const std::exception&) {
        return std::nullopt;
      }
      if (used != text.size() || v > 0xffff) return std::nullopt;
      return uint16_t(v);
    };
    std::optional<std::string> model;
    if (auto v = id16(vendor), d = id16(device); v && d)
      model = m_device_presets.for_pci_id(*v, *d);
    if (model && m_device_presets.find(*model)->type == type) {
      m_tree.entities[dev].model = *model;
      return;
    }
    if (type != "gpu") return;  // a NIC without a preset is p2psim's DMA engine, as it was
    warn(pci, "device",
         fmt::format("no device preset for the GPU at {} ({}:{}): it gets p2psim's default GPU "
                     "(BAR1 256 MiB, VRAM 16 GiB); set `model:` or its keys",
                     id, one_line(vendor.empty() ? "?" : vendor),
                     one_line(device.empty() ? "?" : device)));
    m_tree.entities[dev].comment += "; ASSUMED default GPU: no device preset for its ID";
  }

  static std::string describe_ids(pugi::xml_node pci) {
    std::string v = one_line(pci.attribute("vendor").value());
    std::string d = one_line(pci.attribute("device").value());
    if (v.empty() || v == "0x0000") return "";
    return fmt::format(" ({}:{})", v, d);
  }

  static std::string net_names(pugi::xml_node pci) {
    std::string names;
    for (pugi::xml_node net : pci.child("nic").children("net"))
      if (*net.attribute("name").value())
        names += (names.empty() ? " " : ", ") + one_line(net.attribute("name").value());
    return names;
  }

  void add_link(pugi::xml_node el, size_t up, size_t down) {
    pugi::xml_attribute speed = el.attribute("link_speed"), width = el.attribute("link_width");
    std::vector<std::string> assumed;  // what NCCL's file left unknown, for the link's comment
    if (!speed)
      fail(el, "link_speed", "missing; the link's PCIe generation comes from it (\"16 GT/s\")");
    std::optional<int> gen = pcie_gen_of_speed(speed.value());
    if (!gen && is_unknown_link_value(speed.value())) {
      // NCCL (src/graph/topo.cc, ncclTopoAddPci) reads a rate it does not know as 8 GT/s per
      // lane, the fallback of its kvDictPciGen table: sysfs in a VM often knows none.
      gen = nccl_unknown_speed_gen;
      assumed.push_back(fmt::format("link_speed '{}' unknown, Gen{} as NCCL assumes",
                                    one_line(speed.value()), *gen));
      warn(el, "link_speed",
           fmt::format("'{}' gives no rate: Gen{} (8 GT/s), as NCCL assumes", speed.value(), *gen));
    }
    if (!gen)
      fail(el, "link_speed",
           fmt::format("'{}' is not a PCIe rate (2.5, 5, 8, 16 or 32 GT/s)", speed.value()));
    if (*gen > 5)
      fail(el, "link_speed",
           fmt::format("'{}' is PCIe Gen{}; p2psim models Gen1 to Gen5", speed.value(), *gen));
    if (!width) fail(el, "link_width", "missing; the number of lanes of the link");
    auto lanes = to_long(width.value());
    if (is_unknown_link_value(width.value()) || lanes == 0) {
      // NCCL (src/graph/topo.cc, ncclTopoAddPci): "if (width == 0) width = 16". It writes 0
      // where sysfs has no max_link_width for the port above the device (a VM's).
      lanes = nccl_unknown_width;
      assumed.push_back(fmt::format("link_width '{}' unknown, x{} as NCCL assumes",
                                    one_line(width.value()), *lanes));
      warn(el, "link_width",
           fmt::format("'{}' gives no width: x{}, as NCCL assumes", width.value(), *lanes));
    }
    static constexpr long k_widths[] = {1, 2, 4, 8, 12, 16, 32};
    if (!lanes || std::find(std::begin(k_widths), std::end(k_widths), *lanes) == std::end(k_widths))
      fail(el, "link_width",
           fmt::format("'{}' is not a link width (1, 2, 4, 8, 12, 16 or 32 lanes)", width.value()));
    // The loader numbers buses as firmware does, from one range of 256 for the whole system: a
    // root bus per socket, a bus below each link and one inside each switch.
    m_buses += 1 + (m_tree.entities[down].kind == nccl_kind::pcie_switch ? 1 : 0);
    if (m_buses + m_tree.sockets.size() > 256)
      fail(el, "",
           "with this element the machine needs more than 256 PCI bus numbers (p2psim numbers "
           "the buses of every socket from one range of 256)");
    nccl_link l{up, down, *gen, int(*lanes), {}};
    if (m_tree.entities[up].kind == nccl_kind::socket) {
      const std::string& preset = m_tree.entities[up].platform;
      int max_gen = preset_max_gen(preset, el);
      if (l.gen > max_gen) {
        assumed.push_back(fmt::format("NCCL: {} (Gen{}); {} root ports go up to Gen{}",
                                      one_line(speed.value()), l.gen, preset, max_gen));
        warn(el, "link_speed",
             fmt::format("Gen{} written as Gen{}: the {} preset's root ports go up to Gen{}", l.gen,
                         max_gen, preset, max_gen));
        l.gen = max_gen;
      }
    }
    l.comment = fmt::format("{}", fmt::join(assumed, "; "));
    m_tree.links.push_back(l);
  }

  int preset_max_gen(const std::string& preset, pugi::xml_node el) {
    if (m_options.platform_dirs.empty()) return 5;
    if (auto it = m_max_gen.find(preset); it != m_max_gen.end()) return it->second;
    for (const auto& dir : m_options.platform_dirs) {
      fs::path p = fs::path(dir) / (preset + ".yaml");
      std::error_code ec;
      if (fs::is_regular_file(p, ec))
        return m_max_gen[preset] = load_platform(p.string()).spec.max_gen;
    }
    fail(el, "platform", fmt::format("no preset {}.yaml among the platform directories", preset));
  }

  // gpu0.. and nic0.. in bus order (as nvidia-smi lists them), switches in file order.
  void name_entities() {
    auto name_all = [&](nccl_kind k, const char* prefix, bool by_bus) {
      std::vector<size_t> idx;
      for (size_t i = 0; i < m_tree.entities.size(); ++i)
        if (m_tree.entities[i].kind == k) idx.push_back(i);
      if (by_bus)
        std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
          return m_tree.entities[a].bus < m_tree.entities[b].bus;
        });
      for (size_t n = 0; n < idx.size(); ++n)
        m_tree.entities[idx[n]].name = fmt::format("{}{}", prefix, n);
      return idx;
    };
    m_tree.switches = name_all(nccl_kind::pcie_switch, "sw", false);
    m_tree.gpus = name_all(nccl_kind::gpu, "gpu", true);
    m_tree.nics = name_all(nccl_kind::nic, "nic", true);
  }

  std::string_view m_text;
  std::string m_file;
  const nccl_import_options& m_options;
  device_preset_finder m_device_presets{device_preset_dirs(m_options.platform_dirs)};
  std::vector<size_t> m_line_starts;
  nccl_tree m_tree;
  std::map<pci_busid, pugi::xml_node> m_busids;
  std::map<std::string, int> m_max_gen;
  size_t m_buses = 0;  // below root ports and inside switches
  std::vector<std::string> m_warnings;
};

}  // namespace

nccl_import_result import_nccl_xml(std::string_view xml, const std::string& file,
                                   const nccl_import_options& options) {
  return importer(xml, file, options).run();
}

nccl_import_result import_nccl_file(const std::string& path, const nccl_import_options& options) {
  return import_nccl_xml(detail::read_import_file(path, "an NCCL topology XML file"), path,
                         options);
}

}  // namespace p2psim::topo
