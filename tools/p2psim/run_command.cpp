#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/config/error.h"
#include "sim/core/report.h"
#include "sim/core/runner.h"
#include "sim/core/scenario.h"
#include "sim/topology/address_map.h"
#include "sim/topology/topology_graph.h"
#include "sim/topology/topology_loader.h"
#include "tools/p2psim/commands.h"
#include "tools/p2psim/output_file.h"

namespace p2psim::cli {

namespace fs = std::filesystem;
using nlohmann::json;

void add_run(CLI::App& app, run_args& a) {
  auto* c = app.add_subcommand("run", "Run a scenario and print its bandwidth / latency report");
  c->add_option("scenario", a.scenario, "Scenario YAML file")->required();
  c->add_option("--json", a.json,
                "Write the results as JSON to this file (-: standard output, instead of the "
                "report)");
  c->add_option("--set", a.sets, "Override a parameter: path=value (e.g. link.gpu0.gen=4)");
  c->add_option_function<std::string>(
       "--fidelity", [&a](const std::string& f) { a.sets.push_back("fidelity=" + f); },
       "tlp (every TLP, the default) or burst (DMAs in bursts of TLPs, for sweeps)")
      ->check(CLI::IsMember({"tlp", "burst"}));
  c->add_option_function<uint64_t>(
      "--seed", [&a](uint64_t s) { a.sets.push_back("seed=" + std::to_string(s)); },
      "The data patterns' seed (the scenario's `seed`, default 1; results do not depend on it)");
  c->add_option_function<std::string>(
      "--watchdog", [&a](const std::string& t) { a.sets.push_back("watchdog=" + t); },
      "End the run if simulated time stands still this long in wall time while the model "
      "keeps running (e.g. 30s; 0s: never; default 60s)");
  c->add_option("--only-topology", a.only_topology)->group("");  // internal
  c->add_option("--result-file", a.result_file)->group("");      // internal
}

split_overrides parse_sets(const std::vector<std::string>& sets) {
  split_overrides o;
  for (const auto& s : sets) {
    auto spec = config::parse_override(s);
    (topo::is_topology_override(spec) ? o.topology : o.scenario).push_back(spec);
  }
  return o;
}

pid_t start_self(const std::vector<std::string>& args, const std::string& output) {
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (auto& s : copy) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::cout.flush();
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    if (!output.empty()) {
      int fd = open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0) _exit(3);
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      close(fd);
    }
    execv("/proc/self/exe", argv.data());
    _exit(3);
  }
  return pid;
}

int run_self(const std::vector<std::string>& args, const std::string& what) {
  pid_t pid = start_self(args);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  throw std::runtime_error(fmt::format("the run of {} crashed (signal {})", what,
                                       WIFSIGNALED(status) ? WTERMSIG(status) : 0));
}

namespace {

core::run_result run_here(const core::scenario& sc, size_t index,
                          const std::vector<config::override_spec>& topo_sets) {
  topo::load_options opt;
  opt.platform_dirs = platform_dirs();
  opt.overrides = topo_sets;
  topo::topology t = topo::load_topology(sc.topologies[index], opt);
  topo::address_map m = topo::enumerate(t);
  return core::run_topology(sc, t, m);
}

// Runs topology `index` in a child process (SystemC elaborates once per process). Returns
// the child's exit code; its result is in `result_file`.
int run_child(const char* argv0, const run_args& a, size_t index, const std::string& result_file) {
  std::vector<std::string> args = {
      argv0,           "run",      a.scenario, "--only-topology", std::to_string(index),
      "--result-file", result_file};
  for (const auto& s : a.sets) args.insert(args.end(), {"--set", s});
  return run_self(args, result_file);
}

json combined_json(const core::scenario& sc, const std::vector<core::run_result>& runs,
                   double wall) {
  json j;
  j["scenario"] = sc.name;
  j["scenario_file"] = sc.file;
  j["seed"] = sc.seed;
  j["bandwidth"] = json::array();
  j["latency"] = json::array();
  j["runs"] = json::array();
  uint64_t ns = 0, tlps = 0, hops = 0, in_flight = 0, rss = 0;
  double data_wall = 0;
  for (const auto& r : runs) {
    json rj = core::to_json(r);
    for (auto& b : rj["bandwidth"]) j["bandwidth"].push_back(b);
    for (auto& l : rj["latency"]) j["latency"].push_back(l);
    j["runs"].push_back(rj);
    ns += r.simulated_ns;
    tlps += r.tlps;
    hops += r.hops;
    in_flight = std::max(in_flight, r.peak_in_flight);  // the topologies run one by one
    rss = std::max(rss, r.peak_rss_kib);
    data_wall += r.data_wall_seconds;
  }
  j["sim"] = {{"simulated_ns", ns},
              {"tlps", tlps},
              {"hops", hops},
              {"peak_in_flight", in_flight},
              {"fidelity", runs.empty() ? "tlp" : runs[0].fidelity}};
  j["host"] = {{"wall_seconds", wall}, {"data_wall_seconds", data_wall}, {"peak_rss_kib", rss}};
  return j;
}

}  // namespace

int run_command(const run_args& a, const char* argv0) {
  auto wall0 = std::chrono::steady_clock::now();
  if (!a.json.empty()) check_writable("--json", a.json);
  split_overrides sets = parse_sets(a.sets);
  core::scenario sc = core::load_scenario(a.scenario, sets.scenario);

  if (a.only_topology >= 0) {  // the child of a multi-topology run
    if (size_t(a.only_topology) >= sc.topologies.size())
      throw std::runtime_error("--only-topology out of range");
    core::run_result r = run_here(sc, size_t(a.only_topology), sets.topology);
    std::ofstream(a.result_file) << core::to_json(r).dump();
    return 0;
  }

  std::vector<core::run_result> runs;
  if (sc.topologies.size() == 1) {
    runs.push_back(run_here(sc, 0, sets.topology));
  } else {
    fs::path tmp = fs::temp_directory_path() / fmt::format("p2psim-{}", getpid());
    fs::create_directories(tmp);
    const bool progress = isatty(STDERR_FILENO);  // machine output never mixes with it
    for (size_t i = 0; i < sc.topologies.size(); ++i) {
      if (progress)
        std::cerr << fmt::format("\r[{}/{}] {}\033[K", i + 1, sc.topologies.size(),
                                 sc.topologies[i])
                  << std::flush;
      std::string file = (tmp / fmt::format("run{}.json", i)).string();
      int code = run_child(argv0, a, i, file);
      if (code != 0) {
        fs::remove_all(tmp);
        return code;  // the child printed why
      }
      std::ifstream f(file);
      runs.push_back(core::run_result_from_json(json::parse(f)));
    }
    fs::remove_all(tmp);
    if (progress) std::cerr << "\r\033[K" << std::flush;
  }
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();

  if (!is_stdout(a.json)) {  // standard output carries the JSON alone
    std::cout << fmt::format("p2psim run {}: {}\n", sc.file, sc.name);
    if (!sc.description.empty()) std::cout << sc.description << "\n";
    std::cout << "\n";
    for (const auto& r : runs) core::print_run(std::cout, r, sc.matrix ? &*sc.matrix : nullptr);
    if (runs.size() > 1) core::print_comparison(std::cout, runs);
  }
  if (!a.json.empty()) write_output("--json", a.json, combined_json(sc, runs, wall).dump(2) + "\n");
  bool failed = false;
  for (const auto& r : runs) failed |= !r.errors.empty();
  return failed ? 1 : 0;
}

}  // namespace p2psim::cli
