// p2psim p2p: NVIDIA's p2pBandwidthLatencyTest on a simulated machine (sim/core/p2p_test.h).
// Writes the sample's CUDA program as a scenario, runs it here (one topology: one SystemC
// elaboration) and prints the sample's report from its copies. Exit codes: 0 done, 1 a step
// or a byte check failed, 2 bad input, 3 internal error.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "sim/config/error.h"
#include "sim/config/units.h"
#include "sim/core/p2p_test.h"
#include "sim/core/report.h"
#include "sim/core/runner.h"
#include "sim/core/scenario.h"
#include "sim/topology/address_map.h"
#include "sim/topology/topology_loader.h"
#include "tools/p2psim/commands.h"
#include "tools/p2psim/output_file.h"

namespace p2psim::cli {

namespace fs = std::filesystem;
namespace p2p = core::p2p_test;

void add_p2p(CLI::App& app, p2p_args& a) {
  auto* c = app.add_subcommand(
      "p2p",
      "Run NVIDIA's p2pBandwidthLatencyTest on a topology: GPU copies with peer access "
      "disabled and enabled, one way, both ways, and their latency");
  c->add_option("topology", a.topology, "Topology YAML file")->required();
  c->add_option("--size", a.size,
                "Bytes per copy (default 40000000B, the sample's 10,000,000 ints)");
  c->add_option("--fidelity", a.fidelity, "tlp (every TLP, the default) or burst")
      ->check(CLI::IsMember({"tlp", "burst"}));
  c->add_option("--set", a.sets, "Override a topology parameter: path=value (link.gpu0.gen=4)");
  c->add_option("--json", a.json,
                "Write the matrices as JSON to this file (-: standard output, instead of the "
                "report)");
  c->add_option("--scenario", a.scenario,
                "Also write the CUDA program it runs, as a scenario file, here");
}

int p2p_command(const p2p_args& a) {
  if (!a.json.empty()) check_writable("--json", a.json);
  if (!a.scenario.empty()) check_writable("--scenario", a.scenario);
  split_overrides sets = parse_sets(a.sets);
  if (!sets.scenario.empty())
    throw config::error({"--set " + sets.scenario.front().path, 0, 0}, "--set",
                        "p2psim p2p takes topology settings only (link., device., socket., ...)");
  p2p::options o;
  o.fidelity = a.fidelity;
  if (!a.size.empty()) {
    try {
      o.bytes = config::parse_size(a.size);
    } catch (const std::exception& e) {
      throw config::error({"--size " + a.size, 0, 0}, "--size", e.what());
    }
  }
  if (o.bytes < 4) throw config::error({"--size", 0, 0}, "--size", "copies of at least 4 bytes");
  topo::load_options opt;
  opt.platform_dirs = platform_dirs();
  opt.overrides = sets.topology;
  const topo::topology t = topo::load_topology(a.topology, opt);
  const topo::address_map m = topo::enumerate(t);
  const auto gpus = p2p::gpus(t, m);
  if (gpus.empty()) throw config::error({a.topology, 0, 0}, "devices", "the topology has no GPU");
  const auto access = p2p::access(t, m, gpus);
  const std::string yaml = p2p::scenario_yaml(fs::absolute(a.topology).string(), gpus, access, o);
  const fs::path file =
      a.scenario.empty() ? fs::temp_directory_path() / fmt::format("p2psim-p2p-{}.yaml", getpid())
                         : fs::path(a.scenario);
  {
    std::ofstream f(file);
    if (!f) throw config::error({file.string(), 0, 0}, "--scenario", "cannot write this file");
    f << yaml;
  }
  core::scenario sc = core::load_scenario(file.string(), {});
  if (a.scenario.empty()) fs::remove(file);
  const core::run_result r = core::run_topology(sc, t, m);
  for (const auto& e : r.errors) std::cerr << "ERROR: " << e << "\n";
  if (!r.errors.empty()) return 1;
  const auto f = p2p::from_run(r, gpus, access, o.bytes);
  if (!is_stdout(a.json)) {  // standard output carries the JSON alone
    p2p::print(std::cout, f, a.topology);
    std::cout << fmt::format("\nSimulated {:.3f} ms, {} TLPs at {} fidelity, {:.2f} s wall\n",
                             r.simulated_ns * 1e-6, r.tlps, r.fidelity, r.wall_seconds);
  }
  if (!a.json.empty()) {
    auto out = p2p::to_json(f);
    out["topology_file"] = a.topology;
    out["fidelity"] = r.fidelity;
    out["simulated_ns"] = r.simulated_ns;
    write_output("--json", a.json, out.dump(2) + "\n");
  }
  return 0;
}

}  // namespace p2psim::cli
