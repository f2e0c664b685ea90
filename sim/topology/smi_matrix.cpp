// `nvidia-smi topo -m` text -> smi_matrix: the header's device columns, a row per device in
// the header's order, the affinity columns and the NIC legend.
#include "sim/topology/smi_matrix.h"

#include <algorithm>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "sim/config/error.h"
#include "sim/topology/nccl_import_detail.h"
#include "sim/topology/smi_import.h"

namespace p2psim::topo::detail {

std::string shown(const std::string& s) {
  std::string t = one_line(s);
  return t.size() > 40 ? t.substr(0, 40) + "..." : t;
}

namespace {

constexpr size_t max_devices = 256;

struct field {
  std::string text;  // trimmed
  int column = 0;    // 1-based, where the text starts
};

// nvidia-smi underlines the header with terminal escapes (ESC [ 4 m ... ESC [ 0 m).
std::string strip_escapes(std::string_view line) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      size_t j = i + 2;
      while (j < line.size() && !(line[j] >= '@' && line[j] <= '~')) ++j;
      i = j;
      continue;
    }
    if (line[i] != '\r') out += line[i];
  }
  return out;
}

// nvidia-smi separates columns with tabs; a copy from a terminal has spaces instead. With
// tabs: fields trimmed of spaces, empty ones kept. Without: words.
std::vector<field> split_fields(const std::string& line, bool tabs) {
  std::vector<field> out;
  if (!tabs) {
    for (size_t i = 0; i < line.size();) {
      if (line[i] == ' ' || line[i] == '\t') {
        ++i;
        continue;
      }
      size_t j = line.find_first_of(" \t", i);
      if (j == std::string::npos) j = line.size();
      out.push_back({line.substr(i, j - i), int(i) + 1});
      i = j;
    }
    return out;
  }
  size_t start = 0;
  while (true) {
    size_t end = line.find('\t', start);
    if (end == std::string::npos) end = line.size();
    size_t a = start, b = end;
    while (a < b && line[a] == ' ') ++a;
    while (b > a && line[b - 1] == ' ') --b;
    out.push_back({line.substr(a, b - a), int(a) + 1});
    if (end == line.size()) break;
    start = end + 1;
  }
  return out;
}

// Where the header's device columns end: "CPU Affinity", "NUMA Affinity", "GPU NUMA ID".
bool starts_affinity_columns(const std::string& s) {
  return s == "CPU" || s == "NUMA" || s.rfind("CPU ", 0) == 0 || s.rfind("NUMA ", 0) == 0 ||
         s.find("Affinity") != std::string::npos;
}

class matrix_reader {
 public:
  matrix_reader(std::string_view text, std::string file) : m_text(text), m_file(std::move(file)) {}

  smi_matrix run() {
    std::vector<std::string> lines;
    std::istringstream in{std::string(m_text)};
    for (std::string l; std::getline(in, l);) lines.push_back(strip_escapes(l));
    // The header is the first line that names a GPU or NIC column (GPU0, NIC0): what comes
    // before it (the command, a report's "NVIDIA Topology:" title) is not the matrix's.
    static const std::regex column("(GPU|NIC)[0-9]+");
    size_t i = 0;
    for (; i < lines.size() && lines[i].find("Legend") == std::string::npos; ++i) {
      bool names_one = false;
      for (const field& f : split_fields(lines[i], false))
        names_one = names_one || std::regex_match(f.text, column);
      if (names_one) break;
    }
    if (i == lines.size() || lines[i].find("Legend") != std::string::npos)
      fail(at(1, 1), "",
           "no device matrix: expected what `nvidia-smi topo -m` prints (a header naming GPU0, "
           "GPU1, ..., then a row per device)");
    read_header(lines[i], int(i) + 1);
    for (size_t r = 0; r < m_devices.size(); ++r) {
      const size_t n = i + 1 + r;
      if (n >= lines.size() || lines[n].find_first_not_of(" \t") == std::string::npos)
        fail(at(int(std::min(n, lines.size() - 1)) + 1, 1), m_devices[r].label,
             fmt::format("the matrix ends before the row of {} (the header names {} devices)",
                         m_devices[r].label, m_devices.size()));
      read_row(r, lines[n], int(n) + 1);
    }
    for (size_t a = 0; a < m_devices.size(); ++a)
      for (size_t b = 0; b < a; ++b)
        if (m_cells[a][b] != m_cells[b][a])
          fail(m_devices[a].cells[b], m_devices[a].label + "/" + m_devices[b].label,
               fmt::format("{} here but {} in the row of {}: the matrix is symmetric",
                           shown(m_cells[a][b]), shown(m_cells[b][a]), m_devices[b].label));
    read_nic_legend(lines);
    return {m_file, std::move(m_devices), std::move(m_cells), m_header_line};
  }

  void read_header(const std::string& line, int number) {
    m_tabs = line.find('\t') != std::string::npos;
    const std::vector<field> fields = split_fields(line, m_tabs);
    size_t k = 0;
    for (; k < fields.size() && !starts_affinity_columns(fields[k].text); ++k) {
      const field& f = fields[k];
      if (f.text.empty()) continue;
      for (const auto& d : m_devices)
        if (d.label == f.text) fail(at(number, f.column), f.text, "named twice in the header");
      if (f.text.find_first_of(" :#{}[],'\"") != std::string::npos || f.text.size() > 32)
        fail(at(number, f.column), shown(f.text),
             "not a device name: expected what `nvidia-smi topo -m` prints (GPU0, NIC0, ...)");
      smi_device d;
      d.label = f.text;
      d.gpu = f.text.rfind("GPU", 0) == 0;
      m_devices.push_back(std::move(d));
    }
    // The affinity columns, in the order the header gives them.
    if (k < fields.size()) {
      const std::string rest = line.substr(size_t(fields[k].column - 1));
      std::vector<std::pair<size_t, std::string>> found;
      for (const char* label : {"CPU Affinity", "NUMA Affinity", "GPU NUMA ID"})
        if (size_t at = rest.find(label); at != std::string::npos) found.emplace_back(at, label);
      std::sort(found.begin(), found.end());
      for (const auto& [at, label] : found) m_trailing.push_back(label);
    }
    if (m_devices.empty())
      fail(at(number, 1), "",
           "no device columns: expected a header of GPU0, GPU1, ... as `nvidia-smi topo -m` "
           "prints it");
    if (m_devices.size() > max_devices)
      fail(at(number, 1), "", fmt::format("{} devices; at most {}", m_devices.size(), max_devices));
    m_header_line = number;
    m_cells.assign(m_devices.size(), std::vector<std::string>(m_devices.size()));
  }

  void read_row(size_t r, const std::string& line, int number) {
    smi_device& d = m_devices[r];
    const std::vector<field> f = split_fields(line, m_tabs);
    d.loc = at(number, 1);
    if (f.empty()) fail(at(number, 1), d.label, fmt::format("expected the row of {}", d.label));
    if (f[0].text != d.label)
      fail(at(number, f[0].column), d.label,
           fmt::format("expected the row of {} (rows come in the header's order), found '{}'",
                       d.label, shown(f[0].text)));
    const size_t n = m_devices.size();
    if (f.size() < n + 1)
      fail(at(number, int(line.size()) + 1), d.label,
           fmt::format("{} cells; the header names {} devices", f.size() - 1, n));
    for (size_t c = 0; c < n; ++c) {
      const field& cell = f[c + 1];
      d.cells.push_back(at(number, cell.column));
      const std::string key = d.label + "/" + m_devices[c].label;
      if (c == r) {
        if (cell.text != "X")
          fail(d.cells.back(), key,
               fmt::format("'{}' where a device meets itself: expected X", shown(cell.text)));
      } else if (!smi_closeness(cell.text)) {
        fail(d.cells.back(), key,
             fmt::format("'{}' is not a relation nvidia-smi prints (SYS, NODE, PHB, PXB, PIX, "
                         "NV#)",
                         shown(cell.text)));
      }
      m_cells[r][c] = cell.text;
    }
    std::vector<std::string> values;  // CPU affinity, NUMA affinity, GPU NUMA ID, as given
    for (size_t k = n + 1; k < f.size(); ++k)
      if (!f[k].text.empty()) values.push_back(f[k].text);
    for (size_t k = 0; k < values.size() && k < m_trailing.size(); ++k) {
      if (values[k] == "N/A") continue;
      if (m_trailing[k] == "CPU Affinity") d.cpus = one_line(values[k]);
      if (m_trailing[k] == "NUMA Affinity") d.numa = one_line(values[k]);
    }
  }

  void read_nic_legend(const std::vector<std::string>& lines) {
    static const std::regex entry(R"(^\s*(\S+):\s*(\S+)\s*$)");
    bool in_legend = false;
    for (const auto& l : lines) {
      if (l.find("NIC Legend") != std::string::npos) {
        in_legend = true;
        continue;
      }
      std::smatch m;
      if (!in_legend || !std::regex_match(l, m, entry)) continue;
      for (auto& d : m_devices)
        if (d.label == m[1].str()) d.nic_name = one_line(m[2].str());
    }
  }

 private:
  [[noreturn]] void fail(config::source_loc at, const std::string& key, const std::string& what) {
    throw config::error(std::move(at), key, what);
  }
  config::source_loc at(int line, int column) const { return {m_file, line, column}; }

  std::string_view m_text;
  std::string m_file;
  std::vector<smi_device> m_devices;
  std::vector<std::vector<std::string>> m_cells;
  std::vector<std::string> m_trailing;  // the header's affinity labels
  bool m_tabs = true;                   // columns separated by tabs (else by spaces)
  int m_header_line = 1;
};

}  // namespace

smi_matrix read_smi_matrix(std::string_view text, const std::string& file) {
  return matrix_reader(text, file).run();
}

}  // namespace p2psim::topo::detail
