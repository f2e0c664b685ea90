// Plots of a long-form sweep CSV through gnuplot: the rows of one metric, x from a column,
// one line per value of another column. Each (line, x) must name exactly one row; filters
// (--where column=value) pick among transfers, topologies or links.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace p2psim::sweep {

struct csv_table {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
  int column(const std::string& name) const;  // -1 if absent
};

// RFC 4180 CSV (quoted fields, doubled quotes). Throws std::runtime_error with the line.
csv_table parse_csv(const std::string& text, const std::string& file);

struct plot_request {
  std::string x;       // a column
  std::string metric;  // rows whose `metric` column holds this; their `value` is y
  std::string by;      // optional: one line per value of this column
  std::vector<std::pair<std::string, std::string>> where;  // column = value filters
  std::string title;
};

struct series {
  std::string name;
  std::vector<std::pair<std::string, double>> points;  // (x as written, y), in CSV order
};

// The lines to draw. Throws config::error-like std::runtime_error naming the problem
// (unknown column, no rows, two rows for one point).
std::vector<series> select_series(const csv_table& t, const plot_request& r);

// A gnuplot script that draws `lines` as SVG into `svg_path`. Numeric x values are placed
// by value; otherwise x is a category axis in first-seen order.
std::string gnuplot_script(const std::vector<series>& lines, const plot_request& r,
                           const std::string& svg_path);

}  // namespace p2psim::sweep
