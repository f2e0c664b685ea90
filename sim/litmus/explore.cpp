#include "sim/litmus/explore.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <random>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "models/pcie/order_policy.h"
#include "sim/litmus/in_child.h"
#include "sim/litmus/litmus_run.h"

namespace p2psim::litmus {

using nlohmann::json;

namespace {

// Follows a prefix of choices, then picks at random (alternative 0 when there is no
// generator: the in-order run); records what it took.
class recording_choices final : public pcie::choice_source {
 public:
  recording_choices(std::vector<size_t> prefix, std::optional<uint64_t> seed)
      : m_prefix(std::move(prefix)) {
    if (seed) m_rng.emplace(*seed);
  }
  size_t pick(size_t options) override {
    size_t i = m_taken.size(), c = 0;
    if (i < m_prefix.size())
      c = m_prefix[i] < options ? m_prefix[i] : 0;
    else if (m_rng)
      c = std::uniform_int_distribution<size_t>(0, options - 1)(*m_rng);
    m_taken.push_back(c);
    m_options.push_back(options);
    return c;
  }
  std::vector<size_t> m_prefix, m_taken, m_options;
  std::optional<std::mt19937_64> m_rng;
};

struct child_result {
  std::string key, error;
  bool matches = false;
  std::vector<size_t> taken, options;
  double simulated_ns = 0;
};

// Runs once in a child process and returns what it saw through a pipe.
child_result run_child(const litmus_spec& t, const topo::topology& topo,
                       const pcie::ordering_rules& rules, const std::vector<size_t>& prefix,
                       std::optional<uint64_t> seed) {
  const child_output out = in_child([&] {
    json j;
    try {
      recording_choices src(prefix, seed);
      run_outcome o = run_once(t, topo, pcie::order_policy{rules, &src});
      std::string key = outcome_key(t, o);
      if (!o.blocked.empty()) {
        key += " [not finished:";
        for (const auto& b : o.blocked) key += " " + b;
        key += "]";
      }
      j["key"] = key;
      j["matches"] = t.cond.holds([&](const std::string& n) {
        auto it = o.values.find(n);
        return it == o.values.end() ? value{} : it->second;
      });
      j["error"] = o.error;
      j["taken"] = src.m_taken;
      j["options"] = src.m_options;
      j["simulated_ns"] = o.simulated_ns;
    } catch (const std::exception& e) {
      j["error"] = e.what();
    }
    return j.dump();
  });
  child_result r;
  if (!out.error.empty()) {
    r.error = out.error;
    return r;
  }
  json j = json::parse(out.text);
  r.error = j.value("error", "");
  if (!r.error.empty()) return r;
  r.key = j["key"];
  r.matches = j["matches"];
  r.taken = j["taken"].get<std::vector<size_t>>();
  r.options = j["options"].get<std::vector<size_t>>();
  r.simulated_ns = j["simulated_ns"];
  return r;
}

}  // namespace

test_result explore(const litmus_spec& t, const topo::topology& topo, const explore_options& o) {
  const auto wall0 = std::chrono::steady_clock::now();
  const uint64_t budget = uint64_t(o.runs > 0 ? o.runs : t.runs > 0 ? t.runs : o.default_runs);
  test_result res;
  auto record = [&](const child_result& c) {
    ++res.runs;
    if (!c.error.empty()) {
      if (res.error.empty())
        res.error = fmt::format("run {} ({}): {}", res.runs, format_choices(c.taken), c.error);
      return;
    }
    res.max_decisions = std::max<uint64_t>(res.max_decisions, c.taken.size());
    res.matching += c.matches;
    for (auto& oc : res.outcomes)
      if (oc.key == c.key) {
        ++oc.count;
        return;
      }
    res.outcomes.push_back({c.key, c.matches, 1, format_choices(c.taken)});
  };

  if (o.choices) {  // one run, exactly as recorded
    child_result c = run_child(t, topo, o.rules, *o.choices, std::nullopt);
    record(c);
    res.processes = 1;
    res.distinct = 1;
    res.simulated_ns = c.simulated_ns;
  } else {
    std::vector<child_result> made;  // every run, in the order the walk made them
    walk_options w;
    w.budget = budget;
    w.seed = o.seed;
    tree_walk walk = walk_tree(w,
                               [&](const std::vector<size_t>& prefix,
                                   std::optional<uint64_t> seed) -> std::optional<tree_path> {
                                 made.push_back(run_child(t, topo, o.rules, prefix, seed));
                                 if (!made.back().error.empty()) return std::nullopt;
                                 return tree_path{made.back().taken, made.back().options};
                               });
    for (size_t i : walk.counted) record(made[i]);
    if (walk.failed) record(made.back());  // the run that failed, whatever the walk counted
    res.exhaustive = walk.exhaustive;
    res.tree_estimate = walk.tree_estimate;
    res.distinct = walk.distinct;
    res.explored_share = walk.explored_share();
    res.processes = made.size();
    res.simulated_ns = made.front().simulated_ns;
  }
  switch (t.expect) {
    case expectation::forbidden:
      res.passed = res.matching == 0;
      break;
    case expectation::allowed:
      res.passed = res.matching > 0;
      break;
    case expectation::required:
      res.passed = res.matching == res.runs;
      break;
  }
  if (!res.error.empty()) res.passed = false;
  res.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return res;
}

}  // namespace p2psim::litmus
