// p2psim params: every setting of topology and platform files, from the models' declarations;
// --update-docs FILE rewrites the parameter tables of a docs page from the same source.
#include <fstream>
#include <iostream>
#include <sstream>

#include "sim/config/error.h"
#include "sim/topology/parameters.h"
#include "tools/p2psim/commands.h"

namespace p2psim::cli {

void add_params(CLI::App& app, params_args& a) {
  auto* c = app.add_subcommand(
      "params", "List every topology and platform setting: key, type, default, meaning");
  c->add_option("--update-docs", a.update_docs,
                "Regenerate the tables between <!-- parameters: NAME --> markers in this file");
}

int params_command(const params_args& a) {
  if (a.update_docs.empty()) {
    for (const auto& t : topo::parameter_tables())
      std::cout << "## " << t.name << "\n\n" << config::markdown_table(t.rows) << "\n";
    return 0;
  }
  std::ifstream in(a.update_docs, std::ios::binary);
  if (!in) throw config::error({a.update_docs, 0, 0}, "--update-docs", "cannot read this file");
  std::stringstream text;
  text << in.rdbuf();
  std::string updated;
  try {
    updated = topo::regenerate_parameter_blocks(text.str());
  } catch (const std::runtime_error& e) {
    throw config::error({a.update_docs, 0, 0}, "--update-docs", e.what());
  }
  if (updated == text.str()) return 0;
  std::ofstream out(a.update_docs, std::ios::binary);
  if (!(out << updated) || !out.flush())
    throw config::error({a.update_docs, 0, 0}, "--update-docs", "cannot write this file");
  std::cout << "Updated the parameter tables of " << a.update_docs << "\n";
  return 0;
}

}  // namespace p2psim::cli
