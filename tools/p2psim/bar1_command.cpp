// p2psim bar1: how large must a GPU's BAR1 be for a workload? Runs the scenario's program
// once per candidate BAR1 size, each in a child process of its own (SystemC elaborates once
// per process), gathers what each run wrote, and prints the table and the recommendation
// (sim/core/bar1_sizing). Exit codes: 0 a size works, 1 none does, 2 bad input, 3 internal
// error (a run that crashed or stalled).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "models/gpu/gpu_spec.h"
#include "sim/config/error.h"
#include "sim/config/units.h"
#include "sim/core/bar1_sizing.h"
#include "sim/core/runner.h"
#include "sim/core/scenario.h"
#include "sim/topology/address_map.h"
#include "sim/topology/topology_loader.h"
#include "tools/p2psim/commands.h"
#include "tools/p2psim/output_file.h"

namespace p2psim::cli {

namespace fs = std::filesystem;
namespace sizing = core::bar1_sizing;
using nlohmann::json;

void add_bar1(CLI::App& app, bar1_args& a) {
  auto* c = app.add_subcommand(
      "bar1",
      "Run a scenario's program at several BAR1 sizes and recommend the smallest that works");
  c->add_option("scenario", a.scenario, "Scenario YAML file with a program and a peer_driver")
      ->required();
  c->add_option("--sizes", a.sizes,
                "BAR1 sizes to try, e.g. 256MiB,16GiB (default: powers of two from 256MiB up to "
                "the GPU's BAR1 in the topology, and that size)");
  c->add_option("--gpu", a.gpu, "The GPU to size (default: the one the program uses)");
  c->add_option("--set", a.sets, "Override a parameter: path=value (e.g. link.gpu0.gen=4)");
  c->add_option("--json", a.json,
                "Write the figures as JSON to this file (-: standard output, instead of the "
                "report)");
  c->add_option("--plot", a.plot,
                "Draw peak use and pin failures per size into this SVG (gnuplot)");
  c->add_option("--only-size", a.only_size)->group("");      // internal
  c->add_option("--result-file", a.result_file)->group("");  // internal
}

namespace {

// BAR1 sizing is about what a program's peer driver pins, on one GPU of one topology.
void check_sizable(const core::scenario& sc) {
  if (sc.topologies.size() != 1)
    throw config::error(sc.topology_locs.at(1), "topologies",
                        "p2psim bar1 sizes the GPU of one topology: name one (`topology:`, or "
                        "--set 'topologies=[FILE]')");
  if (!sc.program.peer)
    throw config::error({sc.file, 0, 0}, "peer_driver",
                        "p2psim bar1 sizes BAR1 for what a program's peer driver pins: this "
                        "scenario has no `program` with a `peer_driver`");
}

// --gpu, or else the one GPU the program creates contexts on.
std::string gpu_to_size(const bar1_args& a, const core::scenario& sc, const topo::topology& t) {
  if (!a.gpu.empty()) {
    const auto* d = t.find_device(a.gpu);
    if (!d || !d->spec<gpu::gpu_spec>())
      throw config::error({"--gpu " + a.gpu, 0, 0}, "",
                          fmt::format("'{}' is not a GPU in {}", a.gpu, t.file));
    return a.gpu;
  }
  std::set<std::string> used;
  for (const auto& s : sc.program.steps)
    if (s.call == "cuCtxCreate") used.insert(s.device);
  if (used.size() == 1) return *used.begin();
  std::string names;
  for (const auto& n : used) names += (names.empty() ? "" : ", ") + n;
  throw config::error({sc.file, 0, 0}, "program",
                      used.empty()
                          ? "no cuCtxCreate step names a GPU: say which to size with --gpu"
                          : "the program uses " + names + ": say which to size with --gpu");
}

topo::topology load_with_bar1(const core::scenario& sc, std::vector<config::override_spec> sets,
                              const std::string& gpu, std::optional<uint64_t> bar1_bytes) {
  if (bar1_bytes)
    sets.push_back(config::parse_override(
        fmt::format("device.{}.bar1={}", gpu, config::format_size(*bar1_bytes))));
  topo::load_options opt;
  opt.platform_dirs = platform_dirs();
  opt.overrides = std::move(sets);
  return topo::load_topology(sc.topologies.at(0), opt);
}

// The child: the program alone (the scenario's transfers would map BAR1 pages of their own)
// at one BAR1 size; its run_result goes to the result file.
int run_one_size(const bar1_args& a, core::scenario sc, const split_overrides& sets,
                 const std::string& gpu) {
  const uint64_t bytes = config::parse_size(a.only_size);
  sc.transfers.clear();
  sc.measure_bandwidth = sc.measure_latency = false;
  topo::topology t = load_with_bar1(sc, sets.topology, gpu, bytes);
  topo::address_map m = topo::enumerate(t);
  core::run_result r = core::run_topology(sc, t, m);
  std::ofstream(a.result_file) << core::to_json(r).dump();
  return 0;
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = std::min(dirs.find(':', start), dirs.size());
    fs::path candidate = fs::path(dirs.substr(start, end - start)) / program;
    if (access(candidate.c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

int bar1_command(const bar1_args& a, const char* argv0) {
  split_overrides sets = parse_sets(a.sets);
  core::scenario sc = core::load_scenario(a.scenario, sets.scenario);
  check_sizable(sc);
  const topo::topology t = load_with_bar1(sc, sets.topology, "", std::nullopt);
  const std::string gpu = gpu_to_size(a, sc, t);
  if (!a.only_size.empty()) return run_one_size(a, sc, sets, gpu);

  const gpu::gpu_spec& spec = *t.find_device(gpu)->spec<gpu::gpu_spec>();
  std::vector<uint64_t> sizes =
      a.sizes.empty() ? sizing::default_candidates(spec.bar1_bytes, spec.bar1_reserved_bytes)
                      : sizing::parse_candidates(a.sizes, spec.bar1_reserved_bytes);
  for (uint64_t bytes : sizes) {  // bad input shows now, not after minutes of runs
    try {
      load_with_bar1(sc, sets.topology, gpu, bytes);
    } catch (const config::error& e) {
      throw config::error({"--sizes " + a.sizes, 0, 0}, "",
                          fmt::format("a BAR1 of {} does not fit the topology: {}",
                                      config::format_size(bytes), e.what()));
    }
  }
  if (!a.plot.empty() && !on_path("gnuplot"))
    throw config::error({"--plot " + a.plot, 0, 0}, "",
                        "drawing needs gnuplot, which is not on PATH (tools/install-deps.sh "
                        "installs gnuplot-nox)");
  if (!a.json.empty()) check_writable("--json", a.json);
  if (!a.plot.empty()) check_writable("--plot", a.plot);

  sizing::report r;
  r.scenario = sc.name;
  r.scenario_file = sc.file;
  r.topology = t.name;
  r.gpu = gpu;
  r.topology_bar1_bytes = spec.bar1_bytes;
  r.reserved_bytes = spec.bar1_reserved_bytes;
  fs::path tmp = fs::temp_directory_path() / fmt::format("p2psim-bar1-{}", getpid());
  fs::create_directories(tmp);
  const bool progress = isatty(STDERR_FILENO);  // machine output never mixes with it
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::string size = config::format_size(sizes[i]);
    if (progress)
      std::cerr << fmt::format("\r[{}/{}] BAR1 {}\033[K", i + 1, sizes.size(), size) << std::flush;
    std::string file = (tmp / fmt::format("bar1-{}.json", sizes[i])).string();
    std::vector<std::string> args = {argv0,   "bar1", a.scenario,      "--only-size", size,
                                     "--gpu", gpu,    "--result-file", file};
    for (const auto& s : a.sets) args.insert(args.end(), {"--set", s});
    int code = run_self(args, "BAR1 " + size);
    if (code != 0) {
      fs::remove_all(tmp);
      return code;  // the child printed why
    }
    std::ifstream f(file);
    core::run_result run = core::run_result_from_json(json::parse(f));
    r.sizes.push_back(sizing::figures_of(run.program, run.errors, gpu, sizes[i]));
  }
  if (progress) std::cerr << "\r\033[K" << std::flush;

  if (!is_stdout(a.json)) {  // standard output carries the JSON alone
    std::cout << fmt::format("p2psim bar1 {}: {}\n", sc.file, sc.name);
    if (!sc.description.empty()) std::cout << sc.description << "\n";
    if (!sc.transfers.empty())
      std::cout << "(the scenario's transfers are left out: only the program's pins are sized)\n";
    std::cout << "\n";
    sizing::print_report(std::cout, r);
  }
  if (!a.json.empty()) write_output("--json", a.json, sizing::to_json(r).dump(2) + "\n");
  fs::remove_all(tmp);
  if (!a.plot.empty()) run_gnuplot(sizing::gnuplot_script(r, a.plot));
  if (sizing::recommend(r.sizes)) return 0;
  std::cerr << "p2psim bar1: no BAR1 size tried runs the workload without a pin failure\n";
  return 1;
}

}  // namespace p2psim::cli
