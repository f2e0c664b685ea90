// Writing what the NCCL import found as a topology file: comments first (where it came from,
// which presets were chosen or assumed, what was left out), then the lists the loader reads, each
// element's NCCL bus ID as a comment beside it.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "sim/config/error.h"
#include "sim/topology/nccl_import_detail.h"

namespace p2psim::topo::detail {

std::string yaml_quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
  }
  return out + "\"";
}

std::string interconnect_prefix(const std::string& preset) {
  if (preset == "sandy_bridge_ep" || preset == "ivy_bridge_ep") return "qpi";
  if (preset.starts_with("epyc_")) return "xgmi";
  return "upi";
}

void write_block(std::ostream& os, const std::vector<std::pair<std::string, std::string>>& rows) {
  size_t w = 0;
  for (const auto& [text, comment] : rows) w = std::max(w, text.size());
  for (const auto& [text, comment] : rows) {
    os << text;
    if (!comment.empty()) os << std::string(w - text.size() + 2, ' ') << "# " << comment;
    os << "\n";
  }
}

std::string read_import_file(const std::string& path, const std::string& expected) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw config::error({path, 0, 0}, "", "no such file");
  if (std::filesystem::is_directory(path, ec))
    throw config::error({path, 0, 0}, "", "is a directory, expected " + expected);
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw config::error({path, 0, 0}, "", "cannot read the file");
  return text.str();
}

std::string one_line(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return out;
}

std::string write_nccl_yaml(const nccl_tree& t) {
  std::ostringstream os;
  const std::string base = std::filesystem::path(t.file).filename().string();
  os << "# Imported from the NCCL topology file " << one_line(t.file)
     << " by `p2psim topo --import-nccl`.\n";
  for (const auto& n : t.platform_notes) os << "# " << n << "\n";
  os << "# Not in NCCL's file, so p2psim's defaults: host memory, BAR sizes, VRAM, switch\n"
        "# latency, MPS/MRRS/tags, link latency and credits.\n";
  if (t.sockets.size() > 1)
    os << "# Sockets: each pair joined by an interconnect, as NCCL connects its CPU nodes.\n";
  if (t.has_nvlink) os << "# NVLink connections are not imported (p2psim models PCIe only).\n";
  for (const auto& s : t.skipped) os << "# Not imported: " << s << "\n";
  os << "description: " << yaml_quoted("Imported from NCCL topology " + base) << "\n";
  if (t.mixed_platforms)
    os << "mixed_platforms: true  # the <cpu>s map to different presets (see above)\n";

  std::vector<std::pair<std::string, std::string>> rows;
  os << "sockets:\n";
  for (size_t s : t.sockets)
    rows.emplace_back(
        fmt::format("  - {{name: {}, platform: {}}}", t.entities[s].name, t.entities[s].platform),
        t.entities[s].comment);
  write_block(os, rows);
  if (t.sockets.size() > 1) {
    rows.clear();
    os << "interconnects:\n";
    for (size_t a = 0; a < t.sockets.size(); ++a)
      for (size_t b = a + 1; b < t.sockets.size(); ++b)
        rows.emplace_back(
            fmt::format("  - {{name: {}{}, between: [{}, {}]}}",
                        interconnect_prefix(t.entities[t.sockets[a]].platform), rows.size(),
                        t.entities[t.sockets[a]].name, t.entities[t.sockets[b]].name),
            "");
    write_block(os, rows);
  }
  if (!t.switches.empty()) {
    rows.clear();
    os << "switches:\n";
    for (size_t i : t.switches)
      rows.emplace_back(fmt::format("  - {{name: {}}}", t.entities[i].name), t.entities[i].comment);
    write_block(os, rows);
  }
  if (!t.gpus.empty() || !t.nics.empty()) {
    rows.clear();
    os << "devices:\n";
    for (size_t i : t.gpus)
      rows.emplace_back(t.entities[i].model.empty()
                            ? fmt::format("  - {{name: {}, type: gpu}}", t.entities[i].name)
                            : fmt::format("  - {{name: {}, type: gpu, model: {}}}",
                                          t.entities[i].name, t.entities[i].model),
                        t.entities[i].comment);
    for (size_t i : t.nics)
      rows.emplace_back(t.entities[i].model.empty()
                            ? fmt::format("  - {{name: {}, type: dma_engine}}", t.entities[i].name)
                            : fmt::format("  - {{name: {}, type: dma_engine, model: {}}}",
                                          t.entities[i].name, t.entities[i].model),
                        "NIC " + t.entities[i].comment);
    write_block(os, rows);
  }
  if (!t.links.empty()) {
    rows.clear();
    os << "links:\n";
    for (const auto& l : t.links)
      rows.emplace_back(fmt::format("  - {{up: {}, down: {}, gen: {}, width: {}}}",
                                    t.entities[l.up].name, t.entities[l.down].name, l.gen, l.width),
                        l.comment);
    write_block(os, rows);
  }
  return os.str();
}

}  // namespace p2psim::topo::detail
