#include <fstream>
#include <iostream>

#include "sim/config/error.h"
#include "sim/topology/address_map.h"
#include "sim/topology/topo_report.h"
#include "sim/topology/topology_graph.h"
#include "sim/topology/topology_loader.h"
#include "tools/p2psim/commands.h"

namespace p2psim::cli {

std::vector<std::string> platform_dirs() {
  std::vector<std::string> dirs;
  if (const char* d = std::getenv("P2PSIM_PLATFORMS")) dirs.push_back(d);
  dirs.push_back(P2PSIM_SOURCE_DIR "/topologies/platforms");
  return dirs;
}

void add_topo(CLI::App& app, topo_args& a) {
  auto* c = app.add_subcommand("topo", "Print a topology's tree and nvidia-smi topo -m matrix");
  c->add_option("topology", a.topology, "Topology YAML file")->required();
  c->add_option("--dot", a.dot, "Write the topology as Graphviz DOT to this file");
  c->add_option("--set", a.sets, "Override a parameter: path=value (e.g. link.gpu0.gen=4)");
}

int topo_command(const topo_args& a) {
  topo::load_options opt;
  opt.platform_dirs = platform_dirs();
  for (const auto& s : a.sets) opt.overrides.push_back(config::parse_override(s));
  topo::topology t = topo::load_topology(a.topology, opt);
  topo::address_map m = topo::enumerate(t);
  std::cout << "Topology " << t.name << " (" << t.file << ")\n";
  if (!t.description.empty()) std::cout << t.description << "\n";
  std::cout << "\n";
  topo::print_tree(std::cout, t, m);
  std::cout << "\n";
  topo::print_topo_matrix(std::cout, t);
  if (!a.dot.empty()) {
    std::ofstream f(a.dot);
    if (!f) throw config::error({a.dot, 0, 0}, "--dot", "cannot write this file");
    topo::write_dot(f, t);
  }
  return 0;
}

}  // namespace p2psim::cli
