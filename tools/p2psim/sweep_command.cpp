// p2psim sweep: one `p2psim run` child process per combination of the varied values, N at a
// time; or the same runs as a Slurm job array (--emit-slurm), collected later (--collect).
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "sim/config/error.h"
#include "sim/config/overrides.h"
#include "sim/sweep/slurm_script.h"
#include "sim/sweep/sweep_csv.h"
#include "tools/p2psim/commands.h"
#include "tools/p2psim/output_file.h"

namespace p2psim::cli {

namespace fs = std::filesystem;

void add_sweep(CLI::App& app, sweep_args& a) {
  auto* c = app.add_subcommand("sweep", "Run a scenario for every combination of parameter values");
  c->add_option("scenario", a.scenario, "Scenario YAML file");
  c->add_option("--vary", a.vary, "key=v1,v2,...: a parameter and its values (repeatable)");
  c->add_option("--set", a.sets, "A fixed override for every run: path=value");
  c->add_option_function<std::string>(
       "--fidelity", [&a](const std::string& f) { a.sets.push_back("fidelity=" + f); },
       "Every run at tlp (every TLP, the default) or burst fidelity (--set fidelity=...)")
      ->check(CLI::IsMember({"tlp", "burst"}));
  c->add_option("--jobs,-j", a.jobs, "Runs at a time")->check(CLI::Range(1, 256));
  c->add_option("--csv", a.csv,
                "Write the results here, one row per run and metric (-: standard output, "
                "with --dir)");
  c->add_option("--dir", a.dir, "Keep each run's JSON and log here (default: CSV name + .runs)");
  c->add_option("--emit-slurm", a.emit_slurm, "Write a Slurm job array for the sweep into DIR");
  c->add_option("--collect", a.collect, "Merge a sweep directory's results into --csv");
}

namespace {

[[noreturn]] void usage(const std::string& key, const std::string& message) {
  throw config::error(config::source_loc{}, key, message);
}

std::string self_path() {
  return fs::read_symlink("/proc/self/exe").string();
}

std::string point_text(const sweep::plan& p, size_t i) {
  std::string out;
  for (size_t k = 0; k < p.axes.size(); ++k)
    out += (k ? " " : "") + p.axes[k].key + "=" + p.points[i][k];
  return out;
}

std::string first_error_line(const std::string& log) {
  std::ifstream f(log);
  std::string line, last;
  while (std::getline(f, line)) {
    if (line.find("error") != std::string::npos) return line;
    if (!line.empty()) last = line;
  }
  return last;
}

// Runs every point of the plan, `jobs` at a time; returns how many failed.
size_t run_local(const sweep::plan& p, const std::string& dir, int jobs) {
  sweep::write_plan(dir, p);
  fs::create_directories(fs::path(dir) / "logs");
  const bool progress = isatty(STDERR_FILENO);  // machine output never mixes with it
  std::map<pid_t, size_t> running;
  size_t next = 0, done = 0, failed = 0;
  auto log_of = [&](size_t i) {
    return (fs::path(dir) / "logs" / (sweep::run_stem(i) + ".txt")).string();
  };
  while (done < p.runs()) {
    while (next < p.runs() && running.size() < size_t(jobs)) {
      fs::remove(sweep::result_json_path(dir, next));
      std::vector<std::string> args = {"p2psim", "run"};
      for (auto& x : p.run_arguments(next, sweep::result_json_path(dir, next))) args.push_back(x);
      running[start_self(args, log_of(next))] = next;
      ++next;
    }
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) throw std::runtime_error("waitpid failed");
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const size_t i = it->second;
    running.erase(it);
    ++done;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::ofstream(sweep::exit_code_path(dir, i)) << code << "\n";
    if (code != 0) {
      ++failed;
      if (progress) std::cerr << "\r\033[K";
      std::cerr << fmt::format("run {} ({}) failed with exit {}: {}\n", i, point_text(p, i), code,
                               first_error_line(log_of(i)));
    }
    if (progress)
      std::cerr << fmt::format("\r[{}/{}] {} running, {} failed\033[K", done, p.runs(),
                               running.size(), failed)
                << std::flush;
  }
  if (progress) std::cerr << "\r\033[K" << std::flush;
  return failed;
}

void write_csv(const std::string& csv, const sweep::plan& p, const std::string& dir) {
  write_output("--csv", csv, sweep::to_csv(p, sweep::read_results(dir, p)));
}

// Where the closing line goes: standard error when standard output carries the CSV.
std::ostream& summary_stream(const std::string& csv) {
  return is_stdout(csv) ? std::cerr : std::cout;
}

}  // namespace

int sweep_command(const sweep_args& a) {
  if (!a.collect.empty()) {  // merge a (Slurm) sweep directory
    if (a.csv.empty()) usage("--collect", "needs --csv FILE");
    check_writable("--csv", a.csv);
    if (!a.scenario.empty() || !a.vary.empty())
      usage("--collect", "takes a sweep directory only (no scenario or --vary)");
    sweep::plan p = sweep::read_plan(a.collect);
    auto results = sweep::read_results(a.collect, p);
    size_t missing = 0, failed = 0;
    for (const auto& r : results) {
      missing += !r.exit_code;
      failed += r.exit_code && *r.exit_code != 0;
    }
    write_csv(a.csv, p, a.collect);
    summary_stream(a.csv) << fmt::format(
        "sweep: collected {} runs from {} ({} failed, {} not finished) -> {}\n", p.runs(),
        a.collect, failed, missing, a.csv);
    return failed || missing ? 1 : 0;
  }
  if (a.scenario.empty()) usage("sweep", "needs a SCENARIO (or --collect DIR)");
  std::error_code ec;
  if (!fs::is_regular_file(a.scenario, ec)) usage("sweep", "no scenario file " + a.scenario);
  if (a.vary.empty()) usage("--vary", "name at least one parameter to vary: --vary key=v1,v2");
  for (const auto& s : a.sets) config::parse_override(s);  // syntax errors before any run
  std::vector<sweep::axis> axes;
  for (const auto& v : a.vary) {
    axes.push_back(sweep::parse_axis(v));
    for (const auto& value : axes.back().values)
      config::parse_override(axes.back().key + "=" + value);
  }
  sweep::plan p =
      sweep::make_plan(fs::absolute(a.scenario).lexically_normal().string(), a.sets, axes);
  if (!a.emit_slurm.empty()) {
    std::string script = sweep::emit_slurm(a.emit_slurm, p, self_path());
    std::cout << fmt::format(
        "sweep: {} runs written as a Slurm job array\n  submit:  sbatch {}\n  then:    "
        "p2psim sweep --collect {} --csv FILE\n",
        p.runs(), script, a.emit_slurm);
    return 0;
  }
  if (a.csv.empty()) usage("sweep", "needs --csv FILE (or --emit-slurm DIR)");
  if (is_stdout(a.csv) && a.dir.empty())
    usage("--csv", "- (standard output) needs --dir DIR for the runs' results");
  check_writable("--csv", a.csv);
  const std::string dir = a.dir.empty() ? a.csv + ".runs" : a.dir;
  auto wall0 = std::chrono::steady_clock::now();
  size_t failed = run_local(p, dir, a.jobs);
  write_csv(a.csv, p, dir);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  summary_stream(a.csv) << fmt::format(
      "sweep: {} runs, {} failed, {} at a time, {:.1f} s -> {} (runs in {})\n", p.runs(), failed,
      a.jobs, wall, a.csv, dir);
  return failed ? 1 : 0;
}

}  // namespace p2psim::cli
