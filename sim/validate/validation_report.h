// What `p2psim validate` prints: each row's simulated figure against the measured one, the
// median and worst error per class and over all rows, and whether the limits hold.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/validate/measurement_table.h"

namespace p2psim::validate {

struct row_result {
  const measurement* row = nullptr;
  std::optional<double> simulated;  // none: the run failed
  double error = 0;                 // relative_error(); meaningless without `simulated`
  std::string failure;              // why the run gave no figure
};

struct error_summary {
  size_t rows = 0;
  double median = 0, worst = 0;  // of the absolute errors; a failed run counts as worst
};

struct validation_summary {
  std::vector<std::pair<std::string, error_summary>> classes;  // in validation_classes() order
  error_summary all;
  error_summary independent;  // the rows that calibrate no preset parameter
  bool passed = false;        // median and every row within the limits, every run done
};

validation_summary summarize(const std::vector<row_result>& results);
std::string text_report(const std::vector<row_result>& results, const validation_summary& s);
nlohmann::json json_report(const std::vector<row_result>& results, const validation_summary& s);

}  // namespace p2psim::validate
