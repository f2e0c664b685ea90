#include "sim/sweep/sweep_plan.h"

#include <set>

#include <fmt/format.h>

#include "sim/config/error.h"

namespace p2psim::sweep {

namespace {
[[noreturn]] void bad(const std::string& message) {
  throw config::error(config::source_loc{}, "--vary", message);
}
}  // namespace

// The values are split at commas outside brackets and braces, so a list or map is one value:
// `matrix.devices=[gpu0, gpu1],[gpu0, nic0]` has two.
axis parse_axis(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    bad("'" + text + "' is not key=value1,value2,...");
  axis a;
  a.key = text.substr(0, eq);
  std::set<std::string> seen;
  auto add = [&](std::string v) {
    const size_t first = v.find_first_not_of(' '), last = v.find_last_not_of(' ');
    v = first == std::string::npos ? "" : v.substr(first, last - first + 1);
    if (v.empty()) bad("'" + text + "' has an empty value");
    if (!seen.insert(v).second) bad("'" + text + "' lists " + v + " twice");
    a.values.push_back(v);
  };
  int depth = 0;
  size_t start = eq + 1;
  for (size_t i = start; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '[' || c == '{') ++depth;
    if ((c == ']' || c == '}') && --depth < 0)
      bad("'" + text + "' closes a bracket it never opened");
    if (c == ',' && depth == 0) {
      add(text.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0) bad("'" + text + "' leaves a bracket open");
  add(text.substr(start));
  return a;
}

plan make_plan(const std::string& scenario, const std::vector<std::string>& sets,
               const std::vector<axis>& axes, size_t max_runs) {
  plan p;
  p.scenario = scenario;
  p.sets = sets;
  p.axes = axes;
  size_t total = 1;
  std::set<std::string> keys;
  for (const auto& a : axes) {
    if (!keys.insert(a.key).second) bad(a.key + " is varied twice");
    total *= a.values.size();
    if (total > max_runs) bad(fmt::format("more than {} runs", max_runs));
  }
  std::vector<size_t> digit(axes.size(), 0);
  for (size_t r = 0; r < total; ++r) {
    std::vector<std::string> point;
    for (size_t k = 0; k < axes.size(); ++k) point.push_back(axes[k].values[digit[k]]);
    p.points.push_back(std::move(point));
    for (size_t k = axes.size(); k-- > 0;) {  // the last axis varies fastest
      if (++digit[k] < axes[k].values.size()) break;
      digit[k] = 0;
    }
  }
  return p;
}

std::vector<std::string> plan::run_arguments(size_t i, const std::string& json_path) const {
  std::vector<std::string> args = {scenario};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  for (size_t k = 0; k < axes.size(); ++k)
    args.insert(args.end(), {"--set", axes[k].key + "=" + points.at(i)[k]});
  args.insert(args.end(), {"--json", json_path});
  return args;
}

nlohmann::json to_json(const plan& p) {
  nlohmann::json axes = nlohmann::json::array();
  for (const auto& a : p.axes) axes.push_back({{"key", a.key}, {"values", a.values}});
  return {{"scenario", p.scenario}, {"sets", p.sets}, {"axes", axes}, {"runs", p.runs()}};
}

plan plan_from_json(const nlohmann::json& j) {
  try {
    std::vector<axis> axes;
    for (const auto& a : j.at("axes"))
      axes.push_back(
          {a.at("key").get<std::string>(), a.at("values").get<std::vector<std::string>>()});
    plan p = make_plan(j.at("scenario").get<std::string>(),
                       j.at("sets").get<std::vector<std::string>>(), axes);
    if (p.runs() != j.at("runs").get<size_t>())
      throw std::runtime_error("the run count does not match the axes");
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("not a sweep plan: ") + e.what());
  }
}

std::string run_stem(size_t i) {
  return fmt::format("{:04}", i);
}

}  // namespace p2psim::sweep
