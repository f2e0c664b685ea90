// p2psim plot: a metric of a sweep CSV against one of its columns, as SVG through gnuplot.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <sys/wait.h>

#include "sim/config/error.h"
#include "sim/sweep/csv_plot.h"
#include "tools/p2psim/commands.h"
#include "tools/p2psim/output_file.h"

namespace p2psim::cli {

void add_plot(CLI::App& app, plot_args& a) {
  auto* c = app.add_subcommand("plot", "Plot a sweep CSV (a metric against a column) as SVG");
  c->add_option("csv", a.csv, "A CSV written by p2psim sweep")->required();
  c->add_option("--x", a.x, "The column on the x axis (a varied key)")->required();
  c->add_option("--y", a.y, "The metric on the y axis (gbps, latency_ns, ...)")->required();
  c->add_option("--by", a.by, "One line per value of this column");
  c->add_option("--where", a.where, "column=value: keep only these rows (repeatable)");
  c->add_option("--title", a.title, "The plot's title");
  c->add_option("-o,--output", a.output, "The SVG file to write")->required();
}

// Runs gnuplot on `script`; throws with gnuplot's complaint when it fails.
void run_gnuplot(const std::string& script) {
  FILE* p = popen("gnuplot 2>&1", "w");
  if (!p) throw std::runtime_error("cannot start gnuplot");
  fwrite(script.data(), 1, script.size(), p);
  int status = pclose(p);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    throw std::runtime_error(
        "gnuplot is not installed (tools/install-deps.sh installs gnuplot-nox)");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(fmt::format("gnuplot failed (status {})", status));
}

int plot_command(const plot_args& a) {
  if (is_stdout(a.output))
    throw config::error(config::source_loc{}, "--output",
                        "an SVG file for gnuplot to write (standard output is not one)");
  check_writable("--output", a.output);
  std::ifstream f(a.csv);
  if (!f) throw config::error(config::source_loc{a.csv, 0, 0}, "", "cannot read this file");
  std::stringstream text;
  text << f.rdbuf();
  sweep::plot_request r;
  r.x = a.x;
  r.metric = a.y;
  r.by = a.by;
  r.title = a.title;
  for (const auto& w : a.where) {
    auto eq = w.find('=');
    if (eq == std::string::npos || eq == 0)
      throw config::error(config::source_loc{}, "--where", "'" + w + "' is not column=value");
    r.where.emplace_back(w.substr(0, eq), w.substr(eq + 1));
  }
  std::vector<sweep::series> lines;
  try {
    lines = sweep::select_series(sweep::parse_csv(text.str(), a.csv), r);
  } catch (const std::runtime_error& e) {
    throw config::error(config::source_loc{a.csv, 0, 0}, "", e.what());
  }
  run_gnuplot(sweep::gnuplot_script(lines, r, a.output));
  size_t points = 0;
  for (const auto& l : lines) points += l.points.size();
  std::cout << fmt::format("plot: {} line(s), {} points -> {}\n", lines.size(), points, a.output);
  return 0;
}

}  // namespace p2psim::cli
