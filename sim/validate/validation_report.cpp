#include "sim/validate/validation_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace p2psim::validate {

namespace {
// A run that failed has no error to speak of: it fails the limits outright.
double abs_error(const row_result& r) {
  return r.simulated ? std::abs(r.error) : INFINITY;
}

error_summary summary_of(std::vector<double> errors) {
  error_summary s;
  s.rows = errors.size();
  if (errors.empty()) return s;
  std::sort(errors.begin(), errors.end());
  const size_t n = errors.size();
  s.median = n % 2 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2;
  s.worst = errors.back();
  return s;
}

std::string percent(double e) {
  return std::isinf(e) ? "failed" : fmt::format("{:.1f}%", 100 * e);
}

nlohmann::json summary_json(const error_summary& s) {
  auto num = [](double e) { return std::isinf(e) ? nlohmann::json(nullptr) : nlohmann::json(e); };
  return {{"rows", s.rows}, {"median_abs_error", num(s.median)}, {"worst_abs_error", num(s.worst)}};
}
// A time of 10 us or more in us, so that it reads like the measured column.
std::string simulated_text(double value, figure f) {
  if (f == figure::time && value >= 10'000) return fmt::format("{:.4g} us", value / 1000);
  return fmt::format("{:.4g} {}", value, unit_of(f));
}

}  // namespace

validation_summary summarize(const std::vector<row_result>& results) {
  validation_summary s;
  std::vector<double> all, independent;
  for (const std::string& cls : validation_classes()) {
    std::vector<double> errors;
    for (const row_result& r : results)
      if (r.row->cls == cls) errors.push_back(abs_error(r));
    if (!errors.empty()) s.classes.emplace_back(cls, summary_of(errors));
  }
  for (const row_result& r : results) {
    all.push_back(abs_error(r));
    if (r.row->calibrates.empty()) independent.push_back(abs_error(r));
  }
  s.all = summary_of(all);
  s.independent = summary_of(independent);
  s.passed =
      !results.empty() && s.all.median <= median_error_limit && s.all.worst <= row_error_limit;
  return s;
}

std::string text_report(const std::vector<row_result>& results, const validation_summary& s) {
  std::string out = fmt::format("{:<30} {:<22} {:>18} {:>12} {:>8}\n", "row", "class", "measured",
                                "simulated", "error");
  for (const row_result& r : results) {
    const measurement& m = *r.row;
    const std::string sim = r.simulated ? simulated_text(*r.simulated, m.what) : "-";
    const std::string mark = abs_error(r) > row_error_limit ? "  <- over 15%" : "";
    out += fmt::format("{:<30} {:<22} {:>18} {:>12} {:>8}{}{}\n", m.id, m.cls, m.measured.text, sim,
                       percent(abs_error(r) * (r.error < 0 ? -1 : 1)),
                       m.calibrates.empty() ? "" : "  (calibrates " + m.calibrates + ")", mark);
    if (!r.failure.empty()) out += fmt::format("    run failed: {}\n", r.failure);
  }
  out += fmt::format("\n{:<26} {:>5} {:>10} {:>10}\n", "class", "rows", "median", "worst");
  for (const auto& [cls, c] : s.classes)
    out += fmt::format("{:<26} {:>5} {:>10} {:>10}\n", cls, c.rows, percent(c.median),
                       percent(c.worst));
  out += fmt::format("{:<26} {:>5} {:>10} {:>10}\n", "all rows", s.all.rows, percent(s.all.median),
                     percent(s.all.worst));
  out += fmt::format("{:<26} {:>5} {:>10} {:>10}\n", "rows calibrating nothing", s.independent.rows,
                     percent(s.independent.median), percent(s.independent.worst));
  out += fmt::format("\n{}: median error {} (limit {}), worst row {} (limit {})\n",
                     s.passed ? "PASSED" : "FAILED", percent(s.all.median),
                     percent(median_error_limit), percent(s.all.worst), percent(row_error_limit));
  return out;
}

nlohmann::json json_report(const std::vector<row_result>& results, const validation_summary& s) {
  nlohmann::json rows = nlohmann::json::array();
  for (const row_result& r : results) {
    const measurement& m = *r.row;
    nlohmann::json row = {
        {"id", m.id},
        {"class", m.cls},
        {"machine", m.machine},
        {"how", m.how},
        {"source", m.source},
        {"unit", unit_of(m.what)},
        {"measured",
         {{"text", m.measured.text}, {"low", m.measured.low}, {"high", m.measured.high}}},
        {"scenario", m.scenario},
        {"set", m.sets},
        {"transfer", m.transfer},
        {"calibrates", m.calibrates},
        {"note", m.note}};
    row["simulated"] = r.simulated ? nlohmann::json(*r.simulated) : nlohmann::json(nullptr);
    row["error"] = r.simulated ? nlohmann::json(r.error) : nlohmann::json(nullptr);
    if (!r.failure.empty()) row["failure"] = r.failure;
    rows.push_back(std::move(row));
  }
  nlohmann::json classes = nlohmann::json::object();
  for (const auto& [cls, c] : s.classes) classes[cls] = summary_json(c);
  return {
      {"rows", rows},
      {"classes", classes},
      {"all", summary_json(s.all)},
      {"rows_calibrating_nothing", summary_json(s.independent)},
      {"limits", {{"median_abs_error", median_error_limit}, {"row_abs_error", row_error_limit}}},
      {"passed", s.passed}};
}

}  // namespace p2psim::validate
