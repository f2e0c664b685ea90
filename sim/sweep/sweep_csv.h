// A sweep's results in long form: one CSV row per run and metric, the varied keys as
// columns, so a spreadsheet, pandas or `p2psim plot` can pivot it any way.
//
//   run,link.gpu0.gen,topology,transfer,src,dst,op,metric,value
//   0,3,switch_only,write,nic0,gpu0,write,gbps,12.99
//
// Metrics: gbps (each bandwidth measurement), latency_ns, simulated_ns and tlps (per
// topology), exit_code (per run: 0, 1 when a check failed, 2 bad input, 3 internal error,
// or "missing" when the run left no exit code). Wall times are left out: the CSV of a sweep
// depends only on what was simulated.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/sweep/sweep_plan.h"

namespace p2psim::sweep {

struct run_record {
  std::optional<int> exit_code;          // none: the run never finished
  std::optional<nlohmann::json> result;  // `p2psim run --json` output, when it wrote one
};

std::string to_csv(const plan& p, const std::vector<run_record>& runs);

// A sweep directory: sweep.json (the plan), results/NNNN.json and results/NNNN.exit.
void write_plan(const std::string& dir, const plan& p);
plan read_plan(const std::string& dir);
std::string result_json_path(const std::string& dir, size_t run);
std::string exit_code_path(const std::string& dir, size_t run);
std::vector<run_record> read_results(const std::string& dir, const plan& p);

// One CSV field, quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& s);

}  // namespace p2psim::sweep
