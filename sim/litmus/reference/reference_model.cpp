#include "sim/litmus/reference/reference_model.h"

#include <algorithm>
#include <functional>
#include <random>
#include <stdexcept>
#include <unordered_set>

#include "sim/litmus/reference/machine.h"

namespace p2psim::litmus::reference {

namespace {

// Two independent 64-bit hashes of a state's encoding: a state is walked once.
struct state_id {
  uint64_t a, b;
  bool operator==(const state_id& o) const { return a == o.a && b == o.b; }
};
struct state_id_hash {
  size_t operator()(const state_id& s) const { return size_t(s.a ^ (s.b * 0x9e3779b97f4a7c15ull)); }
};
state_id id_of(const std::string& s) {
  uint64_t fnv = 1469598103934665603ull;
  for (unsigned char c : s) fnv = (fnv ^ c) * 1099511628211ull;
  return {std::hash<std::string>{}(s), fnv};
}

struct too_many_states {};

}  // namespace

model_result enumerate(const litmus_spec& t, const topo::topology& topo, const model_options& o) {
  model_result r;
  try {
    const machine m(t, topo, o.rules, o.witnesses);
    std::unordered_set<state_id, state_id_hash> seen;
    std::vector<std::string> path;
    auto record = [&](const state& s) {
      const auto values = m.outcome(s);
      auto [it, added] = r.outcomes.try_emplace(outcome_key(t, values));
      if (!added) return;
      it->second.values = values;
      it->second.matches = t.cond.holds(
          [&](const std::string& n) { return values.count(n) ? values.at(n) : value{}; });
      it->second.witness = path;
    };
    std::function<void(const state&)> walk = [&](const state& s) {
      if (!seen.insert(id_of(s.encode())).second) return;
      if (++r.states > o.max_states) throw too_many_states{};
      std::vector<successor> next = m.successors(s);
      if (next.empty()) next = m.timeouts(s);
      if (next.empty()) return record(s);
      for (auto& n : next) {
        if (o.witnesses) path.push_back(n.label);
        walk(n.next);
        if (o.witnesses) path.pop_back();
      }
    };
    try {
      walk(m.initial());
      r.complete = true;
    } catch (const too_many_states&) {
      // Runs at random to an end, so the outcomes found do not all come from one corner. Each
      // run hurries the agents or the fabric to its own degree (an agent's step is taken, when
      // there is one, with a probability from 0 to 1 in eighths): uniform choices never let
      // a dozen TLPs all land before an agent's next step, or the other way round.
      std::mt19937_64 rng(o.seed);
      std::uniform_real_distribution<double> coin(0, 1);
      for (; r.random_runs < o.random_runs; ++r.random_runs) {
        path.clear();
        const double hurry_agents = double(r.random_runs % 9) / 8;
        state s = m.initial();
        while (true) {
          std::vector<successor> next = m.successors(s);
          if (next.empty()) next = m.timeouts(s);
          if (next.empty()) break;
          const size_t agents = size_t(
              std::count_if(next.begin(), next.end(), [](const successor& x) { return x.agent; }));
          size_t pick = rng() % next.size();
          if (agents && agents < next.size()) {
            // successors() lists the agents' steps first
            pick =
                coin(rng) < hurry_agents ? rng() % agents : agents + rng() % (next.size() - agents);
          }
          successor& n = next[pick];
          if (o.witnesses) path.push_back(n.label);
          s = std::move(n.next);
        }
        record(s);
      }
    }
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

bool meets_expectation(const litmus_spec& t, const model_result& r) {
  size_t matching = 0;
  for (const auto& [key, o] : r.outcomes) matching += o.matches;
  if (!r.complete) return t.expect == expectation::allowed && matching > 0;
  switch (t.expect) {
    case expectation::forbidden:
      return matching == 0;
    case expectation::allowed:
      return matching > 0;
    case expectation::required:
      return matching == r.outcomes.size();
  }
  return false;
}

const std::vector<std::string>& rule_names() {
  static const std::vector<std::string> names{"P-P",
                                              "P-P:RO",
                                              "P-P:IDO",
                                              "NPR-P",
                                              "NPR-P:IDO",
                                              "Cpl-P",
                                              "Cpl-P:RO",
                                              "Cpl-P:IDO",
                                              "NPW-P",
                                              "NPW-P:RO",
                                              "NPW-P:IDO",
                                              "Cpl-Cpl:same-txn",
                                              "GPU:writes-ordering",
                                              "GPU:cpu-sync",
                                              "GPU:flush",
                                              "CUDA:SYNC_MEMOPS",
                                              "CUDA:stream-order",
                                              "GPU:bar1-read-back",
                                              "Host:snoop",
                                              "Host:no-snoop"};
  return names;
}

}  // namespace p2psim::litmus::reference
