// The table `p2psim validate` holds p2psim to: published hardware measurements, each with its
// source, the machine, how it was measured, and a scenario that sets the measurement up on
// p2psim's presets (docs/validation.md). Plain C++, no SystemC.
#pragma once

#include <string>
#include <vector>

#include "sim/config/source_loc.h"

namespace p2psim::validate {

// The limits a validation is held to: the median error of every row, and each row's.
inline constexpr double median_error_limit = 0.05;
inline constexpr double row_error_limit = 0.15;

// What of a transfer a row compares: its bandwidth (GB/s), or its time (ns: a latency is
// the time of one small transfer alone).
enum class figure { bandwidth, time };
const char* unit_of(figure f);  // "GB/s", "ns"

// A figure as published: one value, a range (runs or machines that differ), or an upper
// bound ("< 0.3 GB/s": low is 0). A simulated figure inside it has no error.
struct measured_value {
  double low = 0, high = 0;
  std::string text;  // as the table writes it
};

struct measurement {
  std::string id;
  std::string cls;      // the class the report sums up by (validation_classes())
  std::string machine;  // what was measured: CPU, device, link
  std::string how;      // the benchmark and its setting
  std::string source;   // where the figure is published: title, and path, issue or URL
  figure what = figure::bandwidth;
  measured_value measured;
  // The preset parameter this figure was used to set ("" for none): such a row checks the
  // arithmetic around the parameter, not the parameter itself.
  std::string calibrates;
  std::string note;               // where measurements disagree: which one the presets follow
  std::string scenario;           // path, as resolved from the table's folder
  std::vector<std::string> sets;  // --set items for its run
  // The transfer whose figure is compared; "a+b": bandwidths of transfers run together,
  // summed (both directions at once).
  std::string transfer;
  config::source_loc loc;  // the row in the table
};

// The classes a row may belong to, in report order.
const std::vector<std::string>& validation_classes();

// Reads a table: a YAML map with `rows`, a list of measurements. Anything malformed, unknown
// or missing is a config::error naming file:line:col and the key.
std::vector<measurement> load_table(const std::string& path);

// Parses "55.3GB/s", "53GB/s..56.6GB/s" or "<0.3GB/s" (a time with a time unit) as `f`'s
// figure; throws std::invalid_argument saying what was expected.
measured_value parse_measured(const std::string& text, figure f);

// Signed error of `simulated` against `m`, relative to the nearest end of its range: 0
// inside it, (simulated - high) / high above, (simulated - low) / low below.
double relative_error(const measured_value& m, double simulated);

}  // namespace p2psim::validate
