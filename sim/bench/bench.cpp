#include "sim/bench/bench.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/config/error.h"
#include "sim/config/units.h"

namespace p2psim::bench {

using nlohmann::json;

namespace {

[[noreturn]] void bad_option(const std::string& key, const std::string& message) {
  throw config::error(config::source_loc{}, key, message);
}

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t comma = list.find(',', start);
    out.push_back(list.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

}  // namespace

run_figures figures_of_run(const json& run_json) {
  run_figures f;
  double wall = 0;
  for (const auto& run : run_json.at("runs")) {
    const auto& s = run.at("sim");
    const auto& h = run.at("host");
    f.fidelity = s.value("fidelity", "tlp");
    f.tlps += s.at("tlps").get<uint64_t>();
    f.hops += s.value("hops", uint64_t(0));
    f.peak_in_flight = std::max(f.peak_in_flight, s.value("peak_in_flight", uint64_t(0)));
    f.simulated_ns += s.at("simulated_ns").get<uint64_t>();
    wall += h.at("wall_seconds").get<double>();
    f.data_wall_seconds += h.value("data_wall_seconds", 0.0);
    f.peak_rss_kib = std::max(f.peak_rss_kib, h.value("peak_rss_kib", uint64_t(0)));
  }
  f.wall_seconds = std::max(0.0, wall - f.data_wall_seconds);
  // Transfers run one after another, so their bytes over their summed times is the rate of
  // the whole run (for one transfer, its own bandwidth).
  double seconds = 0;
  for (const auto& b : run_json.at("bandwidth")) {
    f.bytes += b.at("bytes").get<uint64_t>();
    seconds += b.value("seconds", 0.0);
  }
  f.gbps = seconds > 0 ? double(f.bytes) / seconds / 1e9 : 0;
  return f;
}

json to_json(const run_figures& f) {
  return {{"fidelity", f.fidelity},
          {"tlps", f.tlps},
          {"hops", f.hops},
          {"peak_in_flight", f.peak_in_flight},
          {"simulated_ns", f.simulated_ns},
          {"wall_seconds", f.wall_seconds},
          {"data_wall_seconds", f.data_wall_seconds},
          {"tlps_per_second", f.tlps_per_second()},
          {"hops_per_second", f.hops_per_second()},
          {"peak_rss_kib", f.peak_rss_kib},
          {"bytes", f.bytes},
          {"gbps", f.gbps}};
}

json to_json(const floor_figures& f) {
  return {{"transactions", f.transactions},
          {"hops", f.hops},
          {"hops_per_transaction", f.hops_per_transaction()},
          {"peak_in_flight", f.peak_in_flight},
          {"simulated_ns", f.simulated_ns},
          {"wall_seconds", f.wall_seconds},
          {"hops_per_second", f.hops_per_second()},
          {"peak_rss_kib", f.peak_rss_kib}};
}

floor_figures floor_from_json(const json& j) {
  floor_figures f;
  f.transactions = j.at("transactions");
  f.hops = j.at("hops");
  f.peak_in_flight = j.value("peak_in_flight", uint64_t(0));
  f.simulated_ns = j.at("simulated_ns");
  f.wall_seconds = j.at("wall_seconds");
  f.peak_rss_kib = j.at("peak_rss_kib");
  return f;
}

floor_shape parse_floor_size(const std::string& text) {
  auto parts = split_list(text);
  auto number = [](const std::string& part, uint64_t& out) {
    size_t used = 0;
    if (part.empty() || part[0] == '-') return false;
    out = std::stoull(part, &used);
    return used == part.size();
  };
  try {
    floor_shape f;
    if ((parts.size() == 2 || parts.size() == 3) && number(parts[0], f.transactions) &&
        number(parts[1], f.hops) && (parts.size() == 2 || number(parts[2], f.in_flight)) &&
        f.transactions > 0 && f.hops >= f.transactions && f.hops / 64 <= f.transactions &&
        (f.hops / 64 < f.transactions || f.hops % 64 == 0) && f.in_flight <= f.transactions)
      return f;
  } catch (const std::exception&) {  // not numbers: the message below
  }
  bad_option("--floor",
             "expected TRANSACTIONS,HOPS[,IN_FLIGHT] (at least 1 transaction, 1 to 64 hops per "
             "transaction, at most as many in flight as transactions), got '" +
                 text + "'");
}

std::pair<uint64_t, uint64_t> case_result::floor_size() const {
  const run_figures* run = tlp ? &*tlp : burst ? &*burst : nullptr;
  if (!run || run->tlps == 0) return {0, 0};
  const uint64_t most = run->tlps * 64;
  return {run->tlps, std::clamp(run->hops, run->tlps, most)};
}

double case_result::burst_speedup() const {
  if (!tlp || !burst || burst->wall_seconds <= 0) return 0;
  return tlp->wall_seconds / burst->wall_seconds;
}

double case_result::gbps_difference_percent() const {
  if (!tlp || !burst || tlp->gbps <= 0) return 0;
  return (burst->gbps - tlp->gbps) / tlp->gbps * 100;
}

double case_result::percent_of_floor(const run_figures& run) const {
  if (!floor || floor->hops_per_second() <= 0) return 0;
  return run.hops_per_second() / floor->hops_per_second() * 100;
}

double scale_point::wall_per_gib() const {
  return total_bytes ? run.wall_seconds / (double(total_bytes) / double(1ull << 30)) : 0;
}

size_split split_total(uint64_t total, uint64_t chunk, const std::string& key) {
  if (total <= chunk) return {total, 1};
  if (total % chunk != 0)
    bad_option(key, fmt::format("{} is above the case's {} and not a multiple of it: larger sizes "
                                "are moved as repetitions of {}",
                                config::format_size(total), config::format_size(chunk),
                                config::format_size(chunk)));
  if (total / chunk > 1000000) bad_option(key, config::format_size(total) + " is too large");
  return {chunk, int(total / chunk)};
}

std::vector<uint64_t> parse_sizes(const std::string& list, const std::string& key) {
  std::vector<uint64_t> out;
  for (const auto& item : split_list(list)) {
    uint64_t bytes = 0;
    try {
      bytes = config::parse_size(item);
    } catch (const std::invalid_argument& e) {
      bad_option(key, fmt::format("'{}' is not a size: {}", item, e.what()));
    }
    if (bytes == 0) bad_option(key, "sizes must be at least 1 byte, got '" + item + "'");
    out.push_back(bytes);
  }
  return out;
}

uint64_t scale_size(uint64_t bytes, double factor) {
  if (factor == 1) return bytes;
  constexpr uint64_t page = 4096;
  double scaled = std::round(double(bytes) * factor / page) * page;
  return std::max<uint64_t>(page, uint64_t(scaled));
}

}  // namespace p2psim::bench
