// A sweep: one scenario run for every combination of the varied parameters' values. The plan
// is written as sweep.json beside the runs' results, so a sweep run elsewhere (a Slurm job
// array) is collected into the same CSV as a local one.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace p2psim::sweep {

struct axis {
  std::string key;  // a --set path (topology or scenario parameter)
  std::vector<std::string> values;
};

// "link.gpu0.gen=1,2,3" -> {link.gpu0.gen, [1, 2, 3]}. Throws config::error (key --vary)
// when the text is not key=v1[,v2...] or a value repeats.
axis parse_axis(const std::string& text);

struct plan {
  std::string scenario;           // absolute path
  std::vector<std::string> sets;  // fixed --set overrides, for every run
  std::vector<axis> axes;
  // Run i's value of each axis, in axis order; the last axis varies fastest.
  std::vector<std::vector<std::string>> points;

  size_t runs() const { return points.size(); }
  // The arguments after `p2psim run` for run i (its JSON goes to `json_path`).
  std::vector<std::string> run_arguments(size_t i, const std::string& json_path) const;
};

// The cartesian product. Throws config::error when a key is varied twice or the product
// exceeds `max_runs`.
plan make_plan(const std::string& scenario, const std::vector<std::string>& sets,
               const std::vector<axis>& axes, size_t max_runs = 100000);

nlohmann::json to_json(const plan& p);
plan plan_from_json(const nlohmann::json& j);  // throws std::runtime_error when malformed

// Where run i's files go inside a sweep directory: results/0007.json and the like.
std::string run_stem(size_t i);

}  // namespace p2psim::sweep
