#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "models/gpu/gpu_spec.h"
#include "sim/config/error.h"
#include "sim/config/reader.h"
#include "sim/topology/address_map.h"
#include "sim/topology/nccl_import.h"
#include "sim/topology/parameters.h"
#include "sim/topology/smi_import.h"
#include "sim/topology/topo_report.h"
#include "sim/topology/topology_graph.h"
#include "sim/topology/topology_loader.h"
#include "tools/p2psim/commands.h"
#include "tools/p2psim/output_file.h"

namespace p2psim::cli {

namespace {

// Writes an importer's YAML to -o (or standard output) and loads it back the way
// `p2psim topo OUT` will, so a file that does not load is caught here, not later.
int write_imported(const topo_args& a, const std::string& yaml,
                   const std::vector<std::string>& warnings, const std::string& from) {
  for (const auto& w : warnings) std::cerr << w << "\n";
  if (a.output.empty() || is_stdout(a.output)) {
    std::cout << yaml;
    return 0;
  }
  write_output("--output", a.output, yaml);
  topo::load_options lo;
  lo.platform_dirs = platform_dirs();
  topo::topology t;
  try {
    // The text, not the file: -o may be something that does not read back (/dev/null).
    config::document doc = config::document::parse(yaml, a.output);
    t = topo::load_topology(doc, lo);
  } catch (const config::error& e) {
    // The importer's own mistake, not the user's: report it as an internal error.
    throw std::logic_error(std::string("the imported topology does not load: ") + e.what());
  }
  size_t gpus = 0, nics = 0;
  for (const auto& d : t.devices) (d.spec<gpu::gpu_spec>() ? gpus : nics)++;
  std::cout << "Wrote " << a.output << ": " << t.sockets.size() << " socket(s), "
            << t.switches.size() << " switch(es), " << gpus << " GPU(s), " << nics
            << " NIC(s) as DMA engines, from " << from << "\n";
  return 0;
}

// The written file finds presets in its own platforms/ folder first, as the loader does.
std::vector<std::string> import_platform_dirs(const topo_args& a) {
  namespace fs = std::filesystem;
  std::vector<std::string> dirs;
  if (!a.output.empty()) dirs.push_back((fs::path(a.output).parent_path() / "platforms").string());
  for (const auto& d : platform_dirs()) dirs.push_back(d);
  return dirs;
}

// p2psim topo --import-nccl FILE [-o OUT]
int import_nccl(const topo_args& a) {
  topo::nccl_import_options opt;
  opt.platform_dirs = import_platform_dirs(a);
  topo::nccl_import_result r = topo::import_nccl_file(a.import_nccl, opt);
  return write_imported(a, r.yaml, r.warnings, a.import_nccl);
}

// p2psim topo --import-nvidia-smi FILE [--platform NAME] [-o OUT]
int import_smi(const topo_args& a) {
  topo::smi_import_options opt;
  opt.platform_dirs = import_platform_dirs(a);
  opt.platform = a.platform;
  topo::smi_import_result r = topo::import_smi_file(a.import_smi, opt);
  return write_imported(a, r.yaml, r.warnings, a.import_smi);
}

}  // namespace

std::vector<std::string> platform_dirs() {
  std::vector<std::string> dirs;
  if (const char* d = std::getenv("P2PSIM_PLATFORMS")) dirs.push_back(d);
  dirs.push_back(P2PSIM_SOURCE_DIR "/topologies/platforms");
  return dirs;
}

void add_topo(CLI::App& app, topo_args& a) {
  auto* c = app.add_subcommand("topo", "Print a topology's tree and nvidia-smi topo -m matrix");
  auto* topology = c->add_option("topology", a.topology, "Topology YAML file");
  auto* dot = c->add_option("--dot", a.dot,
                            "Write the topology as Graphviz DOT to this file (-: standard "
                            "output, instead of the report)");
  auto* set =
      c->add_option("--set", a.sets, "Override a parameter: path=value (e.g. link.gpu0.gen=4)");
  auto* import = c->add_option("--import-nccl", a.import_nccl,
                               "Convert NCCL's topology XML (NCCL_TOPO_DUMP_FILE) into a "
                               "topology YAML file instead");
  auto* effective = c->add_flag("--effective", a.effective,
                                "Print every setting's value (defaults, presets and --set "
                                "applied) as a topology file that loads to the same topology");
  auto* smi = c->add_option("--import-nvidia-smi", a.import_smi,
                            "Convert `nvidia-smi topo -m` output (a text file) into a topology "
                            "YAML file instead");
  import->excludes(topology)->excludes(dot)->excludes(set)->excludes(effective)->excludes(smi);
  smi->excludes(topology)->excludes(dot)->excludes(set)->excludes(effective);
  c->add_option("--platform", a.platform,
                "With --import-nvidia-smi: the sockets' platform preset (default: skylake_sp, "
                "with a warning)")
      ->needs(smi);
  auto* out = c->add_option("-o,--output", a.output,
                            "With --import-nccl or --import-nvidia-smi: the YAML file to write "
                            "(default, or -: standard output)");
  c->parse_complete_callback([&a, out] {
    if (a.topology.empty() && a.import_nccl.empty() && a.import_smi.empty())
      throw CLI::RequiredError("topology (or --import-nccl FILE, or --import-nvidia-smi FILE)");
    if (out->count() && a.import_nccl.empty() && a.import_smi.empty())
      throw CLI::ValidationError("--output", "needs --import-nccl or --import-nvidia-smi");
  });
}

int topo_command(const topo_args& a) {
  if (!a.output.empty()) check_writable("--output", a.output);
  if (!a.dot.empty()) check_writable("--dot", a.dot);
  if (!a.import_nccl.empty()) return import_nccl(a);
  if (!a.import_smi.empty()) return import_smi(a);
  topo::load_options opt;
  opt.platform_dirs = platform_dirs();
  for (const auto& s : a.sets) opt.overrides.push_back(config::parse_override(s));
  topo::topology t = topo::load_topology(a.topology, opt);
  for (const auto& w : t.warnings) std::cerr << "warning: " << w << "\n";
  if (a.effective) {
    std::cout << "# " << t.file << " with every setting written out\n" << topo::effective_yaml(t);
    return 0;
  }
  topo::address_map m = topo::enumerate(t);
  if (!is_stdout(a.dot)) {  // else standard output carries the DOT alone
    std::cout << "Topology " << t.name << " (" << t.file << ")\n";
    if (!t.description.empty()) std::cout << t.description << "\n";
    std::cout << "\n";
    topo::print_tree(std::cout, t, m);
    std::cout << "\n";
    topo::print_topo_matrix(std::cout, t);
  }
  if (!a.dot.empty()) {
    std::ostringstream dot;
    topo::write_dot(dot, t);
    write_output("--dot", a.dot, dot.str());
  }
  return 0;
}

}  // namespace p2psim::cli
