// p2psim bench: how fast the simulator itself is. Runs each case scenario (scenarios/bench) as
// a `p2psim run` child process per fidelity (SystemC elaborates once per process), then, in a
// child of its own, the floor: as many TLM-2.0 transactions and hops through trivial
// forwarders (sim/bench/floor), and prints the figures side by side. Exit codes: 0 done, 2 bad
// options, else the first failing child's.
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/bench/bench.h"
#include "sim/bench/floor.h"
#include "sim/bench/pin_cycles.h"
#include "sim/config/error.h"
#include "sim/config/units.h"
#include "sim/core/scenario.h"
#include "tools/p2psim/commands.h"
#include "tools/p2psim/output_file.h"

namespace p2psim::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::vector<std::string> default_cases = {"write_1g", "read_1g", "qpi_write_1g",
                                                "matrix_8gpu"};
// The case --scale-sizes grows, and the largest transfer it moves at once (from its file).
const std::string scale_case = "write_1g";

}  // namespace

void add_bench(CLI::App& app, bench_args& a) {
  auto* c = app.add_subcommand(
      "bench", "Measure the simulator's speed on fixed cases against a TLM-2.0 floor");
  c->add_option("--fidelity", a.fidelity, "tlp, burst or both (default: both)")
      ->check(CLI::IsMember({"tlp", "burst", "both"}));
  c->add_option("--cases", a.cases,
                "Cases to run, e.g. write_1g,matrix_8gpu (default: write_1g, read_1g, "
                "qpi_write_1g, matrix_8gpu)");
  c->add_option("--scale-sizes", a.scale_sizes,
                "Run write_1g at these total sizes, e.g. 256MiB,1GiB,4GiB (burst fidelity, or "
                "tlp with --fidelity tlp); alone, without the cases unless --cases names some");
  c->add_option("--size-factor", a.size_factor,
                "Multiply every case's sizes by this (e.g. 0.001 for a quick check)");
  c->add_option("--repeat", a.repeat,
                "Run each case and its floor this many times, interleaved, and keep the "
                "fastest of each (a shared machine's load only ever slows a run down)");
  c->add_option("--cpu", a.cpu,
                "Pin every run and floor to this CPU (default: the one the bench starts on), "
                "so model and floor are timed on the same core");
  c->add_option("--cases-dir", a.cases_dir,
                "Where the case scenarios are (default: the source "
                "tree's scenarios/bench)");
  c->add_option("--pins", a.pins,
                "Time this many pin/unpin cycles of the driver models, per kind, e.g. 10000000; "
                "alone, without the cases unless --cases names some");
  c->add_option("--pin-cycles", a.pin_cycles,
                "Which kinds of pin cycle --pins runs: get_put, alloc_free, revoke, kmd, "
                "regcache (default: all)");
  c->add_option("--json", a.json,
                "Write the figures as JSON to this file (-: standard output, instead of the "
                "report)");
  c->add_option("--floor", a.floor)->group("");              // internal: TXNS,HOPS[,IN_FLIGHT]
  c->add_option("--result-file", a.result_file)->group("");  // internal
}

namespace {

[[noreturn]] void bad_option(const std::string& key, const std::string& message) {
  throw config::error(config::source_loc{}, key, message);
}

std::vector<std::string> chosen_cases(const bench_args& a) {
  if (a.cases.empty())
    return a.scale_sizes.empty() && a.pins == 0 ? default_cases : std::vector<std::string>{};
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t comma = a.cases.find(',', start);
    out.push_back(a.cases.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string case_file(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / (name + ".yaml")).string();
}

void check_case(const std::string& dir, const std::string& name) {
  std::error_code ec;  // names the file system cannot take are no files either
  if (name.empty() || !fs::is_regular_file(case_file(dir, name), ec)) {
    std::set<std::string> cases;
    if (fs::is_directory(dir, ec))
      for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".yaml") cases.insert(e.path().stem().string());
    std::string known;
    for (const auto& c : cases) known += " " + c;
    bad_option("--cases", fmt::format("no case '{}' (no file {}); cases in {}:{}", name,
                                      case_file(dir, name), dir, known.empty() ? " none" : known));
  }
}

// The --set items that shrink a case by the size factor: every listed transfer and the matrix.
std::vector<std::string> size_sets(const core::scenario& sc, double factor) {
  std::vector<std::string> sets;
  if (factor == 1) return sets;
  for (const auto& t : sc.transfers)
    if (!t.from_matrix)
      sets.push_back(
          fmt::format("transfers.{}.size={}", t.name, bench::scale_size(t.size, factor)));
  if (sc.matrix)
    sets.push_back(fmt::format("matrix.size={}", bench::scale_size(sc.matrix->size, factor)));
  return sets;
}

std::string first_error_line(const std::string& log) {
  std::ifstream f(log);
  std::string line, last;
  while (std::getline(f, line)) {
    if (line.find("error") != std::string::npos || line.find("ERROR") != std::string::npos)
      return line;
    if (!line.empty()) last = line;
  }
  return last;
}

// A child that failed; it printed why into its log.
struct child_failed {
  int code;
};

// Runs a child (its output into `log`) and waits; a failure stops the bench with its code.
void run_child(const std::vector<std::string>& args, const std::string& log,
               const std::string& what) {
  pid_t pid = start_self(args, log);
  int status = 0;
  waitpid(pid, &status, 0);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (code == 0) return;
  std::cerr << fmt::format("p2psim bench: {} failed with exit {}: {}\n", what, code,
                           first_error_line(log));
  throw child_failed{code};
}

class bench_runner {
 public:
  explicit bench_runner(const char* argv0)
      : m_argv0(argv0),
        m_tmp(fs::temp_directory_path() / fmt::format("p2psim-bench-{}", getpid())) {
    fs::create_directories(m_tmp);
  }
  ~bench_runner() { fs::remove_all(m_tmp); }

  bench::run_figures run(const std::string& file, const std::string& fidelity,
                         const std::vector<std::string>& sets, const std::string& what) {
    progress(what);
    const std::string stem = (m_tmp / fmt::format("run{}", m_runs++)).string();
    std::vector<std::string> args = {m_argv0,  "run",    file,          "--fidelity",
                                     fidelity, "--json", stem + ".json"};
    for (const auto& s : sets) args.insert(args.end(), {"--set", s});
    run_child(args, stem + ".log", what);
    std::ifstream f(stem + ".json");
    return bench::figures_of_run(json::parse(f));
  }

  bench::floor_figures floor(uint64_t transactions, uint64_t hops, const std::string& what) {
    progress(what);
    const std::string stem = (m_tmp / fmt::format("floor{}", m_runs++)).string();
    run_child({m_argv0, "bench", "--floor", fmt::format("{},{}", transactions, hops),
               "--result-file", stem + ".json"},
              stem + ".log", what);
    std::ifstream f(stem + ".json");
    return bench::floor_from_json(json::parse(f));
  }

  // In this process: the driver models need no simulation kernel.
  bench::pin_run pin_cycles(const std::string& kind, uint64_t n) {
    progress(fmt::format("{} pin cycles of kind {}", n, kind));
    ++m_runs;
    return bench::run_pin_cycles(kind, n);
  }

  void done() {
    if (m_progress) std::cerr << "\r\033[K" << std::flush;
  }

 private:
  void progress(const std::string& what) {
    if (m_progress) std::cerr << fmt::format("\r[{}] {}\033[K", m_runs + 1, what) << std::flush;
  }

  std::string m_argv0;
  fs::path m_tmp;
  int m_runs = 0;
  const bool m_progress = isatty(STDERR_FILENO);  // machine output never mixes with it
};

// The child of `bench --floor`: one floor in this process.
int floor_child(const bench_args& a) {
  const bench::floor_shape size = bench::parse_floor_size(a.floor);
  if (a.result_file.empty()) bad_option("--floor", "needs --result-file FILE");
  bench::floor_figures f = bench::run_floor(size.transactions, size.hops, size.in_flight);
  std::ofstream(a.result_file) << bench::to_json(f).dump();
  return 0;
}

// Checks --scale-sizes against the scaled case and lists the report's scaling points (their
// runs to come); returns the name of the case's transfer that the points resize.
std::string plan_scaling(const bench_args& a, bench::report& r) {
  check_case(r.cases_dir, scale_case);
  core::scenario sc = core::load_scenario(case_file(r.cases_dir, scale_case), {});
  if (sc.transfers.size() != 1 || sc.matrix)
    bad_option("--scale-sizes", "case " + scale_case + " must have exactly one transfer");
  r.scale_case = scale_case;
  r.scale_fidelity = a.fidelity == "tlp" ? "tlp" : "burst";
  r.scale_chunk = bench::scale_size(sc.transfers[0].size, a.size_factor);
  for (uint64_t total : bench::parse_sizes(a.scale_sizes, "--scale-sizes")) {
    bench::size_split split = bench::split_total(total, r.scale_chunk, "--scale-sizes");
    r.scale.push_back({total, split.size, split.count, {}});
  }
  return sc.transfers[0].name;
}

// Pins this process, and so every child it starts, to one CPU: the cores of a shared virtual
// machine can differ in speed by half, and a share of the floor means something only when
// both ran on the same one. Returns the CPU, or -1 where pinning is not possible.
int pin_to_cpu(int cpu) {
  if (cpu < 0) cpu = sched_getcpu();
  if (cpu < 0) return -1;
  if (cpu >= CPU_SETSIZE) bad_option("--cpu", fmt::format("no CPU {} on this machine", cpu));
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    bad_option("--cpu", fmt::format("cannot run on CPU {} here", cpu));
  return cpu;
}

// Of several runs of the same work, the fastest: the others lost time to other work.
template <class figures>
void keep_fastest(std::optional<figures>& best, figures run) {
  if (!best || run.wall_seconds < best->wall_seconds) best = std::move(run);
}

}  // namespace

int bench_command(const bench_args& a, const char* argv0) {
  if (!a.floor.empty()) return floor_child(a);
  if (!(a.size_factor > 0 && a.size_factor <= 1e6))
    bad_option("--size-factor", fmt::format("must be a number above 0, got {}", a.size_factor));
  if (a.repeat < 1 || a.repeat > 100)
    bad_option("--repeat", fmt::format("must be 1 to 100, got {}", a.repeat));
  bench::report r;
  r.repeat = a.repeat;
  r.cpu = pin_to_cpu(a.cpu);
  r.cases_dir =
      a.cases_dir.empty() ? std::string(P2PSIM_SOURCE_DIR "/scenarios/bench") : a.cases_dir;
  r.size_factor = a.size_factor;
  if (a.fidelity != "burst") r.fidelities.push_back("tlp");
  if (a.fidelity != "tlp") r.fidelities.push_back("burst");
  // Bad options show now, not after minutes of runs.
  const std::vector<std::string> names = chosen_cases(a);
  std::vector<core::scenario> scenarios;
  for (const auto& n : names) {
    check_case(r.cases_dir, n);
    scenarios.push_back(core::load_scenario(case_file(r.cases_dir, n), {}));
  }
  const std::string scale_transfer = a.scale_sizes.empty() ? "" : plan_scaling(a, r);
  if (!a.pin_cycles.empty() && a.pins == 0) bad_option("--pin-cycles", "needs --pins N");
  const std::vector<std::string> pin_kinds =
      a.pin_cycles.empty() ? bench::pin_cycle_kinds()
                           : bench::parse_pin_cycle_kinds(a.pin_cycles, "--pin-cycles");
  if (!a.json.empty()) check_writable("--json", a.json);

  try {
    bench_runner runner(argv0);
    for (size_t i = 0; i < names.size(); ++i) {
      bench::case_result c;
      c.name = names[i];
      c.scenario = case_file(r.cases_dir, names[i]);
      const auto sets = size_sets(scenarios[i], a.size_factor);
      // Interleaved, so a spell of load slows runs of every kind alike.
      for (int k = 0; k < a.repeat; ++k) {
        const std::string round = a.repeat > 1 ? fmt::format(" ({}/{})", k + 1, a.repeat) : "";
        for (const auto& f : r.fidelities)
          keep_fastest(f == "tlp" ? c.tlp : c.burst,
                       runner.run(c.scenario, f, sets,
                                  fmt::format("{} at {} fidelity{}", c.name, f, round)));
        auto [transactions, hops] = c.floor_size();
        if (transactions > 0)
          keep_fastest(c.floor, runner.floor(transactions, hops,
                                             fmt::format("floor of {}{}", c.name, round)));
      }
      r.cases.push_back(std::move(c));
    }
    for (auto& p : r.scale) {
      p.run = runner.run(case_file(r.cases_dir, scale_case), r.scale_fidelity,
                         {fmt::format("transfers.{}.size={}", scale_transfer, p.size),
                          fmt::format("transfers.{}.count={}", scale_transfer, p.count)},
                         fmt::format("{} of {}", config::format_size(p.total_bytes), scale_case));
    }
    r.pin_cycles = a.pins;
    for (const auto& kind : a.pins ? pin_kinds : std::vector<std::string>{})
      r.pins.push_back(runner.pin_cycles(kind, a.pins));
    runner.done();
  } catch (const child_failed& e) {
    return e.code;
  } catch (const std::runtime_error& e) {  // a driver call of the pin cycles failed
    std::cerr << "p2psim bench: pin cycles failed: " << e.what() << "\n";
    return 1;
  }

  if (!is_stdout(a.json)) bench::print_report(std::cout, r);  // else the JSON alone
  if (!a.json.empty()) write_output("--json", a.json, bench::to_json(r).dump(2) + "\n");
  return 0;
}

}  // namespace p2psim::cli
