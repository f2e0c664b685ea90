#include "sim/validate/measurement_table.h"

#include <filesystem>
#include <set>
#include <stdexcept>

#include "sim/config/reader.h"
#include "sim/config/units.h"

namespace p2psim::validate {

namespace fs = std::filesystem;

const char* unit_of(figure f) {
  return f == figure::bandwidth ? "GB/s" : "ns";
}

const std::vector<std::string>& validation_classes() {
  static const std::vector<std::string> classes = {
      "link-limited DMA",       "host DMA curves", "root-complex P2P", "cross-socket",
      "small-transfer latency", "switch latency",  "CUDA copies"};
  return classes;
}

namespace {
std::string trim(std::string s) {
  const auto first = s.find_first_not_of(" \t");
  const auto last = s.find_last_not_of(" \t");
  return first == std::string::npos ? "" : s.substr(first, last - first + 1);
}

double parse_figure(const std::string& text, figure f) {
  return f == figure::bandwidth ? config::parse_bandwidth_gbs(text) : config::parse_time_ns(text);
}
}  // namespace

measured_value parse_measured(const std::string& text, figure f) {
  measured_value m;
  m.text = trim(text);
  if (!m.text.empty() && m.text[0] == '<') {
    m.low = 0;
    m.high = parse_figure(trim(m.text.substr(1)), f);
  } else if (auto dots = m.text.find(".."); dots != std::string::npos) {
    m.low = parse_figure(trim(m.text.substr(0, dots)), f);
    m.high = parse_figure(trim(m.text.substr(dots + 2)), f);
    if (m.low > m.high)
      throw std::invalid_argument("a range goes from the lower figure to the higher, '" + m.text +
                                  "' does not");
  } else {
    m.low = m.high = parse_figure(m.text, f);
  }
  if (m.high <= 0)
    throw std::invalid_argument("a measured figure is above zero, '" + m.text + "' is not");
  return m;
}

double relative_error(const measured_value& m, double simulated) {
  if (simulated > m.high) return (simulated - m.high) / m.high;
  if (simulated < m.low) return (simulated - m.low) / m.low;
  return 0;
}

std::vector<measurement> load_table(const std::string& path) {
  const config::document doc = config::document::load(path);
  const config::node_reader root = doc.root();
  const fs::path dir = fs::path(path).parent_path();
  std::vector<measurement> rows;
  std::set<std::string> ids;
  for (const config::node_reader& r : root.list("rows")) {
    measurement m;
    m.loc = r.loc();
    m.id = r.str("id");
    if (!ids.insert(m.id).second) r.fail("id", "'" + m.id + "' names another row already");
    m.cls = r.choice("class", validation_classes());
    m.machine = r.str("machine");
    m.how = r.str("how");
    m.source = r.str("source");
    m.what = r.choice("figure", {"bandwidth", "time"}) == "time" ? figure::time : figure::bandwidth;
    try {
      m.measured = parse_measured(r.str("measured"), m.what);
    } catch (const std::invalid_argument& e) {
      r.fail("measured", e.what());
    }
    m.calibrates = r.str("calibrates", "");
    m.note = r.str("note", "");
    const fs::path scenario = dir / r.str("scenario");
    if (!fs::is_regular_file(scenario)) r.fail("scenario", "no scenario file " + scenario.string());
    m.scenario = scenario.lexically_normal().string();
    if (r.has("set")) m.sets = r.string_list("set");
    m.transfer = r.str("transfer");
    if (m.what == figure::time && m.transfer.find('+') != std::string::npos)
      r.fail("transfer", "a time is that of one transfer; only bandwidths add up ('a+b')");
    r.done();
    rows.push_back(std::move(m));
  }
  if (rows.empty()) root.fail("rows", "a table has at least one row");
  root.done();
  return rows;
}

}  // namespace p2psim::validate
