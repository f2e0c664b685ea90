#include "sim/sweep/csv_plot.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

namespace p2psim::sweep {

int csv_table::column(const std::string& name) const {
  auto it = std::find(columns.begin(), columns.end(), name);
  return it == columns.end() ? -1 : int(it - columns.begin());
}

csv_table parse_csv(const std::string& text, const std::string& file) {
  std::vector<std::vector<std::string>> records(1, std::vector<std::string>(1));
  bool quoted = false;
  int line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    auto& field = records.back().back();
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        line += c == '\n';
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      records.back().emplace_back();
    } else if (c == '\n') {
      ++line;
      records.emplace_back(1);
    } else if (c != '\r') {
      field += c;
    }
  }
  if (quoted) throw std::runtime_error(fmt::format("{}:{}: unterminated quoted field", file, line));
  if (records.back().size() == 1 && records.back()[0].empty()) records.pop_back();
  if (records.empty()) throw std::runtime_error(file + ": empty CSV");
  csv_table t;
  t.columns = records.front();
  for (size_t r = 1; r < records.size(); ++r) {
    if (records[r].size() != t.columns.size())
      throw std::runtime_error(fmt::format("{}: record {} has {} fields, the header {}", file,
                                           r + 1, records[r].size(), t.columns.size()));
    t.rows.push_back(std::move(records[r]));
  }
  return t;
}

namespace {

bool numeric(const std::string& s, double* out = nullptr) {
  if (s.empty()) return false;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return false;
  if (out) *out = v;
  return true;
}

std::string gnuplot_string(const std::string& s) {  // single-quoted, quotes doubled
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::vector<series> select_series(const csv_table& t, const plot_request& r) {
  auto need = [&](const std::string& name, const char* what) {
    int c = t.column(name);
    if (c < 0)
      throw std::runtime_error(fmt::format("{} '{}' is not a column of the CSV", what, name));
    return c;
  };
  const int x = need(r.x, "--x"), metric = need("metric", "column"),
            value = need("value", "column");
  const int by = r.by.empty() ? -1 : need(r.by, "--by");
  std::vector<std::pair<int, std::string>> filters;
  for (const auto& [col, v] : r.where) filters.emplace_back(need(col, "--where"), v);
  std::vector<series> out;
  for (const auto& row : t.rows) {
    if (row[metric] != r.metric) continue;
    bool keep = true;
    for (const auto& [c, v] : filters) keep &= row[c] == v;
    if (!keep) continue;
    double y = 0;
    if (!numeric(row[value], &y))
      throw std::runtime_error(fmt::format("{} value '{}' is not a number", r.metric, row[value]));
    const std::string name = by < 0 ? r.metric : r.by + "=" + row[by];
    auto s = std::find_if(out.begin(), out.end(), [&](const series& z) { return z.name == name; });
    if (s == out.end()) s = out.insert(out.end(), series{name, {}});
    for (const auto& p : s->points)
      if (p.first == row[x])
        throw std::runtime_error(fmt::format(
            "two rows of {} for {}={}{}: narrow them with --where (e.g. --where transfer=...) "
            "or --by",
            r.metric, r.x, row[x], by < 0 ? "" : " in " + name));
    s->points.emplace_back(row[x], y);
  }
  if (out.empty())
    throw std::runtime_error("no rows with metric " + r.metric +
                             " match (metrics are in the "
                             "`metric` column: gbps, latency_ns, simulated_ns, tlps, exit_code)");
  return out;
}

std::string gnuplot_script(const std::vector<series>& lines, const plot_request& r,
                           const std::string& svg_path) {
  bool all_numeric = true;
  std::vector<std::string> categories;  // first-seen order
  for (const auto& s : lines)
    for (const auto& [x, y] : s.points) {
      all_numeric &= numeric(x);
      if (std::find(categories.begin(), categories.end(), x) == categories.end())
        categories.push_back(x);
    }
  std::string out = fmt::format(
      "set terminal svg size 900,540 dynamic enhanced font 'sans,12' background '#ffffff'\n"
      "set output {}\nset title {} noenhanced\nset xlabel {} noenhanced\n"
      "set ylabel {} noenhanced\nset grid\nset key outside right top noenhanced\n",
      gnuplot_string(svg_path), gnuplot_string(r.title.empty() ? r.metric + " vs " + r.x : r.title),
      gnuplot_string(r.x), gnuplot_string(r.metric));
  if (!all_numeric) out += "set xrange [-0.5:" + std::to_string(categories.size()) + "-0.5]\n";
  std::string plot = "plot ";
  for (size_t i = 0; i < lines.size(); ++i) {
    out += fmt::format("$line{} << EOD\n", i);
    for (const auto& [x, y] : lines[i].points) {
      if (all_numeric) {
        out += fmt::format("{} {}\n", x, y);
      } else {
        auto at = std::find(categories.begin(), categories.end(), x) - categories.begin();
        out += fmt::format("{} {} \"{}\"\n", at, y, x);
      }
    }
    out += "EOD\n";
    plot += fmt::format("{}$line{} using 1:2{} with linespoints lw 2 pt 7 title {}", i ? ", " : "",
                        i, all_numeric ? "" : ":xtic(3)", gnuplot_string(lines[i].name));
  }
  return out + plot + "\n";
}

}  // namespace p2psim::sweep
