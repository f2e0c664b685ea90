// p2psim validate: runs the scenario of each row of the table of published hardware
// measurements (scenarios/validation/measurements.yaml) in a `p2psim run` child process (once
// for rows that share it), compares the row's figure with the measured one, and prints the
// errors by row and by class, as text and JSON. Exit 0 when the median error is within 5% and
// every row within 15%, 1 when not, 2 for bad input (the table at file:line, an option).
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/config/error.h"
#include "sim/validate/measurement_table.h"
#include "sim/validate/validation_report.h"
#include "tools/p2psim/commands.h"
#include "tools/p2psim/output_file.h"

namespace p2psim::cli {

namespace fs = std::filesystem;
using nlohmann::json;

void add_validate(CLI::App& app, validate_args& a) {
  auto* c = app.add_subcommand("validate",
                               "Compare p2psim with published hardware measurements, row by row");
  c->add_option("--table", a.table,
                "The table of measurements (default: the source tree's "
                "scenarios/validation/measurements.yaml)");
  c->add_option("--rows", a.rows, "Only these rows, by id, e.g. h200_h2d_256mib,snb_read_64b");
  c->add_option("--json", a.json,
                "Write rows, errors and summary as JSON to this file (-: standard output, "
                "instead of the report)");
}

namespace {

[[noreturn]] void bad_option(const std::string& key, const std::string& message) {
  throw config::error(config::source_loc{}, key, message);
}

// The rows --rows names, in table order; an id the table lacks is bad input.
std::vector<const validate::measurement*> chosen_rows(const std::vector<validate::measurement>& t,
                                                      const std::string& ids) {
  std::vector<const validate::measurement*> rows;
  std::set<std::string> wanted;
  std::stringstream list(ids);
  for (std::string id; std::getline(list, id, ',');)
    if (!id.empty()) wanted.insert(id);
  const bool all = wanted.empty();
  for (const auto& m : t)
    if (all || wanted.erase(m.id)) rows.push_back(&m);
  if (!wanted.empty())
    bad_option("--rows", fmt::format("no row '{}' in the table", *wanted.begin()));
  return rows;
}

// The last line of a child's output that says what went wrong.
std::string failure_of(const std::string& log) {
  std::ifstream f(log);
  std::string line, last;
  while (std::getline(f, line))
    if (!line.empty()) last = line;
  return last;
}

// The row's figure in a run's JSON: its transfer's bandwidth or time in ns; "a+b": the
// bandwidths of transfers that ran together, summed (both directions of a link).
std::optional<double> figure_of(const json& run, const validate::measurement& m) {
  double sum = 0;
  std::stringstream names(m.transfer);
  for (std::string name; std::getline(names, name, '+');) {
    const json* found = nullptr;
    for (const json& t : run.at("bandwidth"))
      if (t.at("transfer") == name) found = &t;
    if (!found) return std::nullopt;
    sum += m.what == validate::figure::bandwidth ? found->at("gbps").get<double>()
                                                 : found->at("seconds").get<double>() * 1e9;
  }
  return sum;
}

// Runs each scenario with its --set items once: rows that read other transfers of the same
// run share it.
class row_runner {
 public:
  row_runner(const fs::path& tmp, const char* argv0) : m_tmp(tmp), m_argv0(argv0) {}

  validate::row_result run(const validate::measurement& m) {
    validate::row_result r;
    r.row = &m;
    std::cerr << "p2psim validate: " << m.id << "\n";
    const json& run = run_of(m);
    if (run.contains("failure")) {
      r.failure = run["failure"];
      return r;
    }
    r.simulated = figure_of(run, m);
    if (!r.simulated)
      r.failure =
          fmt::format("the run has no transfer '{}' (table row at {})", m.transfer, m.loc.str());
    else
      r.error = validate::relative_error(m.measured, *r.simulated);
    return r;
  }

 private:
  // The run's JSON, or {"failure": why} when it failed.
  const json& run_of(const validate::measurement& m) {
    std::vector<std::string> args = {m_argv0, "run", m.scenario};
    for (const auto& s : m.sets) args.insert(args.end(), {"--set", s});
    auto [it, fresh] = m_runs.try_emplace(args);
    if (!fresh) return it->second;
    const std::string stem = (m_tmp / m.id).string();
    args.insert(args.end(), {"--json", stem + ".json"});
    const pid_t pid = start_self(args, stem + ".log");
    int status = 0;
    waitpid(pid, &status, 0);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != 0) {
      it->second = {
          {"failure", fmt::format("p2psim run exited {}: {}", code, failure_of(stem + ".log"))}};
    } else {
      std::ifstream f(stem + ".json");
      it->second = json::parse(f);
    }
    return it->second;
  }

  fs::path m_tmp;
  std::string m_argv0;
  std::map<std::vector<std::string>, json> m_runs;
};

}  // namespace

int validate_command(const validate_args& a, const char* argv0) {
  const std::string table =
      a.table.empty() ? std::string(P2PSIM_SOURCE_DIR "/scenarios/validation/measurements.yaml")
                      : a.table;
  const std::vector<validate::measurement> rows = validate::load_table(table);
  const auto chosen = chosen_rows(rows, a.rows);
  if (!a.json.empty()) check_writable("--json", a.json);  // found now, not after every run
  const fs::path tmp = fs::temp_directory_path() / fmt::format("p2psim-validate-{}", getpid());
  fs::create_directories(tmp);
  std::vector<validate::row_result> results;
  row_runner runner(tmp, argv0);
  for (const validate::measurement* m : chosen) results.push_back(runner.run(*m));
  fs::remove_all(tmp);
  const validate::validation_summary s = validate::summarize(results);
  if (!is_stdout(a.json))  // else the JSON alone
    std::cout << fmt::format("p2psim validate: {} rows of {}\n\n", results.size(), table)
              << validate::text_report(results, s);
  if (!a.json.empty()) {
    json j = validate::json_report(results, s);
    j["table"] = table;
    write_output("--json", a.json, j.dump(2) + "\n");
  }
  return s.passed ? 0 : 1;
}

}  // namespace p2psim::cli
