// p2psim litmus: runs litmus tests, explores the orders the PCIe ordering table and the GPU
// memory model leave open, checks each test's expectation, and writes JUnit XML for CI.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "models/pcie/ordering.h"
#include "sim/config/error.h"
#include "sim/litmus/explore.h"
#include "sim/litmus/in_child.h"
#include "sim/litmus/junit.h"
#include "sim/litmus/litmus_run.h"
#include "sim/litmus/litmus_spec.h"
#include "sim/litmus/mutation_score.h"
#include "sim/litmus/reference/reference_model.h"
#include "sim/topology/topology_loader.h"
#include "tools/p2psim/commands.h"
#include "tools/p2psim/output_file.h"

namespace p2psim::cli {

namespace fs = std::filesystem;

void add_litmus(CLI::App& app, litmus_args& a) {
  auto* c = app.add_subcommand("litmus",
                               "Run litmus tests of PCIe ordering and GPUDirect memory visibility");
  c->add_option("paths", a.paths, "Litmus files, or folders of them (*.yaml)");
  c->add_option("--runs", a.runs,
                "Runs per test (exhaustive when the choices fit, else random); default: the "
                "test's own `runs`, else 200");
  c->add_option("--seed", a.seed, "Seed of the random runs (default 1)");
  c->add_option("--junit", a.junit,
                "Write JUnit XML to this file (-: standard output, the report going to "
                "standard error)");
  c->add_option("--mutate", a.mutate, "Turn this ordering rule off (see --list-rules)");
  c->add_option("--choices", a.choices, "Replay one run: the choices an outcome printed");
  c->add_flag("--fail-fast", a.fail_fast, "Stop at the first test that fails");
  c->add_flag("--list-rules", a.list_rules, "List the ordering rules --mutate accepts");
  c->add_flag("--lint", a.lint,
              "Fail an `allowed` test that passes with no choice made in any run (it passes "
              "by timing alone)");
  c->add_option("--min-exhaustive", a.min_exhaustive,
                "Fail unless at least this many tests were explored in every order")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--explain", a.explain,
                "Explain an outcome by the reference model (\"f=1 d=0\", or `condition` for "
                "those the condition names): an execution that gives it and the rules it takes, "
                "or the rules that forbid it");
  c->add_flag("--no-model", a.no_model,
              "Do not hold the runs to the reference model (docs/formats-litmus.md, \"The "
              "reference model\")");
  c->add_flag("--mutation-score", a.mutation_score,
              "Turn each rule off in turn (or only --mutate's) and report the tests that fail, "
              "and on how many topology classes; exit 1 when a rule is killed by none");
}

namespace {

std::vector<std::string> expand(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const auto& p : paths) {
    std::error_code ec;  // a name the file system cannot take is no file either
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> here;
      for (const auto& e : fs::directory_iterator(p))
        if (e.is_regular_file() && e.path().extension() == ".yaml") here.push_back(e.path());
      std::sort(here.begin(), here.end());
      files.insert(files.end(), here.begin(), here.end());
    } else if (fs::exists(p, ec)) {
      files.push_back(p);
    } else {
      throw config::error({p, 0, 0}, "", "no such litmus file or folder");
    }
  }
  return files;
}

// "(every order)", or how much of the tree the runs took: "(187 orders of about 1.2 k, 15%)".
std::string explored(const litmus::test_result& r) {
  if (r.exhaustive) return " (every order)";
  if (r.processes <= 1) return "";  // a replay
  // 5478, 268.3 k, 9.7 G, 5.9 P, 1.2e+18
  const double tree = r.tree_estimate;
  const int thousands = tree < 1e4 ? 0 : std::min(5, int(std::log10(tree) / 3));
  const std::string about = tree >= 1e18 ? fmt::format("{:.1e}", tree)
                            : thousands  ? fmt::format("{:.1f} {}", tree / std::pow(1e3, thousands),
                                                       "kMGTP"[thousands - 1])
                                         : fmt::format("{:.0f}", tree);
  const double pct = 100 * r.explored_share;
  const std::string share = pct >= 1      ? fmt::format("{:.0f}%", pct)
                            : pct >= 0.01 ? fmt::format("{:.2f}%", pct)
                                          : std::string("under 0.01%");
  return fmt::format(" ({} orders of about {}, {})", r.distinct, about, share);
}

// An `allowed` test whose runs never made a choice matches by timing alone: no ordering rule
// turned off can make it fail, and a change of timing can make it pass or fail.
bool by_timing_alone(const litmus::litmus_spec& t, const litmus::test_result& r) {
  return t.expect == litmus::expectation::allowed && r.error.empty() && r.exhaustive &&
         r.max_decisions == 0 && r.matching > 0;
}

std::string report(const litmus::litmus_spec& t, const litmus::test_result& r) {
  std::string s;
  if (!t.spec.empty()) s += fmt::format("  rule: {}\n", t.spec);
  s += fmt::format("  {} ({}): {} runs{}, up to {} choices per run\n", litmus::to_string(t.expect),
                   t.cond.text(), r.runs, explored(r), r.max_decisions);
  for (const auto& o : r.outcomes)
    s += fmt::format("  {} {:>7}  {:<40} choices {}\n", o.matches ? "*" : " ", o.count, o.key,
                     o.witness);
  if (!r.error.empty()) s += "  error: " + r.error + "\n";
  if (by_timing_alone(t, r))
    s += "  lint: allowed, but no run made a choice: the outcome comes from timing alone\n";
  return s;
}

std::string failure(const litmus::litmus_spec& t, const litmus::test_result& r, bool lint) {
  if (!r.error.empty()) return r.error;
  if (lint && by_timing_alone(t, r))
    return "--lint: an allowed outcome that no choice led to (it passes by timing alone)";
  if (r.passed) return "";
  switch (t.expect) {
    case litmus::expectation::forbidden:
      return fmt::format("forbidden outcome observed in {} of {} runs", r.matching, r.runs);
    case litmus::expectation::allowed:
      return fmt::format("allowed outcome never observed in {} runs", r.runs);
    case litmus::expectation::required:
      break;
  }
  return fmt::format("required outcome missing in {} of {} runs", r.runs - r.matching, r.runs);
}

struct model_check {
  std::string text, failure;
};

// The test against the reference model: its verdict on the expectation, and every outcome the
// runs saw among those it allows (soundness); which allowed outcomes no run reached
// (completeness).
model_check model_verdict(const litmus::litmus_spec& t, const topo::topology& topo,
                          const litmus::test_result& r) {
  model_check c;
  const litmus::reference::model_result m = litmus::reference::enumerate(t, topo, {});
  if (!m.error.empty()) {
    c.text = "  model: not enumerated: " + m.error + "\n";
    return c;
  }
  // A run's key names the agents that never finished after the values; the model's does not.
  auto values = [](const std::string& key) { return key.substr(0, key.find(" [not finished")); };
  std::vector<std::string> outside, unreached;
  for (const auto& o : r.outcomes)
    if (!m.outcomes.count(values(o.key))) outside.push_back(o.key);
  for (const auto& [key, o] : m.outcomes) {
    bool seen = false;
    for (const auto& x : r.outcomes) seen |= values(x.key) == key;
    if (!seen) unreached.push_back(key);
  }
  if (!m.complete) {
    // Too many states to walk them all: what the runs saw can be shown allowed, not the rest.
    c.text = fmt::format(
        "  model: over {} states, not all walked; {} outcomes found allowed (and {} runs at "
        "random), {} of the {} seen among them\n",
        m.states - 1, m.outcomes.size(), m.random_runs, r.outcomes.size() - outside.size(),
        r.outcomes.size());
    for (const auto& k : outside) c.text += fmt::format("    not found allowed: {}\n", k);
    if (!outside.empty())
      c.failure = fmt::format(
          "{} outcome(s) the reference model did not find allowed in {} states and {} runs at "
          "random (too many states to know they are not)",
          outside.size(), m.states - 1, m.random_runs);
    return c;
  }
  c.text = fmt::format("  model: {} outcomes allowed ({} states), {} reached\n", m.outcomes.size(),
                       m.states, m.outcomes.size() - unreached.size());
  // Completeness: what the runs did not reach, though every order was run, the test must say
  // why (`unreached:`); what it says cannot be reached must not have been.
  const std::string stem = fs::path(t.topology).stem().string();
  auto said_unreached =
      [&](const std::map<std::string, litmus::value>& values) -> const litmus::unreached_spec* {
    for (const auto& u : t.unreached)
      if ((u.on.empty() || std::count(u.on.begin(), u.on.end(), stem)) &&
          u.when.holds([&](const std::string& n) {
            return values.count(n) ? values.at(n) : litmus::value{};
          }))
        return &u;
    return nullptr;
  };
  std::vector<std::string> unexplained;
  for (const auto& k : unreached) {
    const litmus::unreached_spec* u = said_unreached(m.outcomes.at(k).values);
    // A test that rests on timing says why the outcomes of its condition are not reached.
    const bool by_timing = !t.timing.empty() && m.outcomes.at(k).matches;
    c.text += fmt::format("    not reached: {}{}\n", k,
                          u           ? " (" + u->why + ")"
                          : by_timing ? " (the `timing:` premise)"
                                      : "");
    if (!u && !by_timing && r.exhaustive) unexplained.push_back(k);
  }
  std::vector<std::string> reached_anyway;
  for (const auto& [key, o] : m.outcomes)
    if (std::find(unreached.begin(), unreached.end(), key) == unreached.end() &&
        said_unreached(o.values))
      reached_anyway.push_back(key);
  for (const auto& k : outside) c.text += fmt::format("    OUTSIDE the model: {}\n", k);
  const bool meets = litmus::reference::meets_expectation(t, m);
  if (!t.timing.empty())
    c.text += fmt::format("    the expectation rests on timing: {}\n", t.timing);
  if (!outside.empty())
    c.failure = fmt::format("{} outcome(s) the reference model does not allow", outside.size());
  else if (!meets && t.timing.empty())
    c.failure =
        "the reference model's outcomes do not meet the expectation (if it rests on "
        "timing, say so with `timing:`)";
  else if (meets && !t.timing.empty())
    c.failure = "`timing:` given, but the reference model meets the expectation without it";
  else if (!unexplained.empty())
    c.failure = fmt::format(
        "every order was run and the model allows {} outcome(s) no run reached ({}): reach them, "
        "or say why under `unreached:`",
        unexplained.size(), fmt::join(unexplained, ", "));
  else if (!reached_anyway.empty())
    c.failure = fmt::format("`unreached:` names outcome(s) the runs reached: {}",
                            fmt::join(reached_anyway, ", "));
  return c;
}

// The reference model's walk runs in a child process: its memory (up to some hundred MB) would
// stay with this process and make every run forked after it slower.
model_check check_model(const litmus::litmus_spec& t, const topo::topology& topo,
                        const litmus::test_result& r) {
  const litmus::child_output out = litmus::in_child([&] {
    const model_check c = model_verdict(t, topo, r);
    return nlohmann::json{{"text", c.text}, {"failure", c.failure}}.dump();
  });
  if (!out.error.empty())
    return {"  model: " + out.error + "\n", "the reference model: " + out.error};
  const auto j = nlohmann::json::parse(out.text);
  return {j["text"], j["failure"]};
}

// `--explain`: by the reference model alone (no runs), the outcome `what` (or those that meet
// the condition): an execution that reaches it, step by step, with the rules each TLP that
// passed another relied on; if none does, the rules that, taken out one at a time, let one.
std::string explain(const litmus::litmus_spec& t, const topo::topology& topo,
                    const std::string& what) {
  namespace ref = litmus::reference;
  auto wanted = [&](const std::string& key, const ref::allowed_outcome& o) {
    return what == "condition" ? o.matches : key == what;
  };
  auto steps = [](const ref::allowed_outcome& o) {
    std::string s;
    for (size_t i = 0; i < o.witness.size(); ++i)
      s += fmt::format("      {:>3}. {}\n", i + 1, o.witness[i]);
    return s;
  };
  ref::model_options opt;
  opt.witnesses = true;
  const ref::model_result m = ref::enumerate(t, topo, opt);
  if (!m.error.empty()) return "  model: not enumerated: " + m.error + "\n";
  std::string s;
  for (const auto& [key, o] : m.outcomes)
    if (wanted(key, o)) s += fmt::format("  {}: allowed; one execution:\n{}", key, steps(o));
  if (!s.empty()) return s;
  const std::string name = what == "condition" ? "(" + t.cond.text() + ")" : what;
  s = fmt::format("  {}: {}\n", name, m.complete ? "forbidden" : "not found in the states walked");
  for (const auto& rule : ref::rule_names()) {
    opt.rules.off = {rule};
    const ref::model_result without = ref::enumerate(t, topo, opt);
    for (const auto& [key, o] : without.outcomes)
      if (wanted(key, o)) {
        s += fmt::format("    by {}: without it, {} is allowed:\n{}", rule, key, steps(o));
        break;
      }
  }
  return s;
}

// Every rule (or `only`) turned off in turn over the tests, until two tests on two topology
// classes fail (sim/litmus/mutation_score.h).
int mutation_score(const std::vector<litmus::litmus_spec>& tests,
                   const std::vector<topo::topology>& topologies, const litmus_args& a,
                   std::optional<pcie::order_rule> only) {
  std::vector<int> cls;
  for (size_t i = 0; i < tests.size(); ++i)
    cls.push_back(litmus::test_topology_class(tests[i], topologies[i]));
  size_t rules = 0, killed = 0, covered = 0;
  for (const auto& rule : pcie::ordering_rule_catalogue()) {
    if (only && rule.id != *only) continue;
    litmus::explore_options opt;
    opt.runs = a.runs;
    opt.seed = a.seed;
    opt.rules.disable(rule.id);
    litmus::rule_kills k{rule.name, {}, {}};
    // The tests whose rule (`spec`) names this one first: they are the likeliest to fail
    // without it. Once one has failed, only a test of another class can add to the score.
    std::vector<size_t> order(tests.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_partition(order.begin(), order.end(), [&](size_t i) {
      return tests[i].spec.find(rule.name) != std::string::npos;
    });
    for (size_t n = 0; n < order.size() && !k.covered(); ++n) {
      const size_t i = order[n];
      if (k.classes.count(cls[i])) continue;
      const litmus::test_result r = litmus::explore(tests[i], topologies[i], opt);
      if (failure(tests[i], r, false).empty()) continue;
      k.tests.push_back(tests[i].name);
      k.classes.insert(cls[i]);
    }
    ++rules;
    killed += k.killed();
    covered += k.covered();
    std::string classes;
    for (int c : k.classes) classes += (classes.empty() ? "" : ", ") + std::to_string(c);
    std::string names;
    for (const auto& n : k.tests) names += (names.empty() ? "" : ", ") + n;
    std::cout << fmt::format("{:<20} {:<8} {}\n", rule.name,
                             k.covered()  ? "covered"
                             : k.killed() ? "killed"
                                          : "SURVIVED",
                             k.killed()
                                 ? fmt::format("by {} ({} {}, class {})", names, k.tests.size(),
                                               k.tests.size() == 1 ? "test" : "tests", classes)
                                 : "no test fails without it")
              << std::flush;
  }
  std::cout << fmt::format(
      "mutation score: {} of {} rules killed ({:.0f}%), {} by two tests on two topology "
      "classes\n",
      killed, rules, rules ? 100.0 * double(killed) / double(rules) : 0.0, covered);
  return killed == rules ? 0 : 1;
}

}  // namespace

int litmus_command(const litmus_args& a) {
  if (a.list_rules) {
    for (const auto& r : pcie::ordering_rule_catalogue())
      std::cout << fmt::format("{:<18} {}\n", r.name, r.text);
    return 0;
  }
  if (a.paths.empty()) throw config::error({}, "paths", "name at least one litmus file or folder");
  if (!a.junit.empty()) check_writable("--junit", a.junit);
  litmus::explore_options opt;
  if (!a.mutate.empty()) {  // every run's fabric is built with this rule off
    auto rule = pcie::ordering_rule_by_name(a.mutate);
    if (!rule) {
      std::string names;
      for (const auto& r : pcie::ordering_rule_catalogue())
        names += std::string(names.empty() ? "" : ", ") + r.name;
      throw config::error({"--mutate " + a.mutate, 0, 0}, "",
                          "no ordering rule named '" + a.mutate + "' (one of: " + names + ")");
    }
    if (!a.mutation_score) opt.rules.disable(*rule);
  }
  opt.runs = a.runs;
  opt.seed = a.seed;
  const auto files = expand(a.paths);
  if (!a.choices.empty()) {
    if (files.size() != 1)
      throw config::error({"--choices", 0, 0}, "", "replays one run of one test: name one file");
    try {
      opt.choices = litmus::parse_choices(a.choices);
    } catch (const std::invalid_argument& e) {
      throw config::error({"--choices " + a.choices, 0, 0}, "", e.what());
    }
  }
  // Every file is read and checked before any runs, so a typo fails fast.
  std::vector<litmus::litmus_spec> tests;
  std::vector<topo::topology> topologies;
  for (const auto& f : files) {
    for (auto& t : litmus::with_variants(litmus::load_litmus(f))) {
      topo::load_options lo;
      lo.platform_dirs = platform_dirs();
      lo.overrides = t.topology_sets;
      topologies.push_back(topo::load_topology(t.topology, lo));
      litmus::check_litmus(t, topologies.back());
      tests.push_back(std::move(t));
    }
  }
  if (!a.explain.empty()) {
    for (size_t i = 0; i < tests.size(); ++i)
      std::cout << fmt::format("{}  ({})\n", tests[i].name, tests[i].file)
                << explain(tests[i], topologies[i], a.explain) << "\n";
    return 0;
  }
  if (a.mutation_score)
    return mutation_score(tests, topologies, a,
                          a.mutate.empty() ? std::nullopt : pcie::ordering_rule_by_name(a.mutate));
  // Standard output carries the JUnit XML alone when it is asked for there.
  std::ostream& out = is_stdout(a.junit) ? std::cerr : std::cout;
  std::vector<litmus::junit_case> cases;
  size_t failed = 0, exhaustive = 0;
  uint64_t runs = 0;
  double wall = 0;
  for (size_t i = 0; i < tests.size(); ++i) {
    const auto& t = tests[i];
    out << fmt::format("{}  ({})\n", t.name, t.file) << std::flush;
    litmus::test_result r = litmus::explore(t, topologies[i], opt);
    std::string text = report(t, r), why = failure(t, r, a.lint);
    if (a.mutate.empty() && a.choices.empty() && !a.no_model) {
      const model_check m = check_model(t, topologies[i], r);
      text += m.text;
      if (why.empty()) why = m.failure;
    }
    out << text << (why.empty() ? "  ok\n\n" : "  FAILED: " + why + "\n\n") << std::flush;
    failed += !why.empty();
    runs += r.processes;
    exhaustive += r.exhaustive;
    wall += r.wall_seconds;
    cases.push_back({t.name, t.file, r, text, why});
    if (a.fail_fast && !why.empty()) break;
  }
  out << fmt::format(
      "litmus: {} tests, {} passed, {} failed, {} in every order ({} runs, {:.1f} s){}\n",
      cases.size(), cases.size() - failed, failed, exhaustive, runs, wall,
      a.mutate.empty() ? "" : ", rule " + a.mutate + " turned off");
  const bool too_few = exhaustive < size_t(a.min_exhaustive);
  if (too_few)
    out << fmt::format(
        "litmus: FAILED: {} tests explored in every order, --min-exhaustive asks for {}\n",
        exhaustive, a.min_exhaustive);
  if (!a.junit.empty()) {
    std::string suite = "p2psim litmus";
    if (!a.mutate.empty()) suite += " --mutate " + a.mutate;
    write_output("--junit", a.junit, litmus::junit_xml(suite, cases));
  }
  return failed || too_few ? 1 : 0;
}

}  // namespace p2psim::cli
