// p2psim params: every setting of topology and platform files and every statistic of the
// results, from the models' declarations; --update-docs FILE rewrites the tables of a docs page
// from the same source.
#include <fstream>
#include <iostream>
#include <sstream>

#include "sim/config/error.h"
#include "sim/config/param_docs.h"
#include "sim/core/stat_tables.h"
#include "sim/topology/parameters.h"
#include "tools/p2psim/commands.h"

namespace p2psim::cli {

void add_params(CLI::App& app, params_args& a) {
  auto* c = app.add_subcommand(
      "params",
      "List every topology and platform setting (key, type, default, meaning) and every "
      "statistic of the results (key, unit, meaning)");
  c->add_option("--update-docs", a.update_docs,
                "Regenerate the tables between <!-- parameters: NAME --> and <!-- stats: NAME "
                "--> markers in this file");
}

int params_command(const params_args& a) {
  if (a.update_docs.empty()) {
    std::cout << "# Settings (topology and platform files)\n\n";
    for (const auto& t : topo::parameter_tables())
      std::cout << "## " << t.name << "\n\n" << config::markdown_table(t.rows) << "\n";
    std::cout << "# Statistics (--json, under each run's `stats`)\n\n";
    for (const auto& [name, table] : core::stat_tables_markdown())
      std::cout << "## " << name << "\n\n" << table << "\n";
    return 0;
  }
  std::ifstream in(a.update_docs, std::ios::binary);
  if (!in) throw config::error({a.update_docs, 0, 0}, "--update-docs", "cannot read this file");
  std::stringstream text;
  text << in.rdbuf();
  std::string updated;
  try {
    updated = config::regenerate_blocks(topo::regenerate_parameter_blocks(text.str()), "stats",
                                        core::stat_tables_markdown());
  } catch (const std::runtime_error& e) {
    throw config::error({a.update_docs, 0, 0}, "--update-docs", e.what());
  }
  if (updated == text.str()) return 0;
  std::ofstream out(a.update_docs, std::ios::binary);
  if (!(out << updated) || !out.flush())
    throw config::error({a.update_docs, 0, 0}, "--update-docs", "cannot write this file");
  std::cout << "Updated the tables of " << a.update_docs << "\n";
  return 0;
}

}  // namespace p2psim::cli
