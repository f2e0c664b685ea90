#include "sim/core/bar1_sizing.h"

#include <algorithm>
#include <bit>

#include <fmt/format.h>

#include "sim/config/error.h"
#include "sim/config/units.h"

namespace p2psim::core::bar1_sizing {

using nlohmann::json;

namespace {

constexpr uint64_t page_bytes = 64 * 1024;  // BAR1 maps 64 KiB pages (guide 6.2)
constexpr double mib_bytes = 1024.0 * 1024.0;

// "256" for whole MiB (how nvidia-smi prints BAR1), "478.06" otherwise.
std::string mib(uint64_t bytes) {
  if (bytes % (1ull << 20) == 0) return fmt::format("{}", bytes >> 20);
  return fmt::format("{:.2f}", double(bytes) / mib_bytes);
}

// 510060000 -> "510,060,000": byte counts an architect can read at a glance.
std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

const size_result& shown_run(const report& r, std::optional<size_t> best) {
  return best ? r.sizes[*best] : r.sizes.back();  // no size works: the largest tells most
}

}  // namespace

double size_result::peak_used_percent() const {
  return bar1_bytes ? 100.0 * double(peak_used_bytes) / double(bar1_bytes) : 0.0;
}

std::optional<double> size_result::hit_rate() const {
  if (hits + misses == 0) return std::nullopt;
  return double(hits) / double(hits + misses);
}

std::string size_result::verdict() const {
  if (works()) return "ok";
  if (errors.empty()) return "ENOMEM, recovered";
  return "FAILED";
}

std::vector<uint64_t> default_candidates(uint64_t bar1_bytes, uint64_t reserved_bytes) {
  std::vector<uint64_t> sizes;
  for (uint64_t s = smallest_default_bytes; s < bar1_bytes; s *= 2)
    if (s > reserved_bytes) sizes.push_back(s);
  if (bar1_bytes > reserved_bytes) sizes.push_back(bar1_bytes);
  return sizes;
}

std::vector<uint64_t> parse_candidates(const std::string& list, uint64_t reserved_bytes) {
  auto fail = [&](const std::string& message) {
    throw config::error({"--sizes " + list, 0, 0}, "", message);
  };
  std::vector<uint64_t> sizes;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = std::min(list.find(',', start), list.size());
    std::string item = list.substr(start, end - start);
    start = end + 1;
    if (item.empty()) fail("an empty size (write them as 256MiB,1GiB,...)");
    uint64_t bytes = 0;
    try {
      bytes = config::parse_size(item);
    } catch (const std::invalid_argument& e) {
      fail(fmt::format("'{}': {}", item, e.what()));
    }
    // PCIe BARs (and so resizable BAR1) are powers of two; BAR1 maps 64 KiB pages.
    if (!std::has_single_bit(bytes) || bytes < page_bytes)
      fail(fmt::format("'{}': a BAR1 size is a power of two of at least 64KiB", item));
    if (bytes <= reserved_bytes)
      fail(fmt::format("'{}' leaves nothing beyond the {} the driver reserves", item,
                       config::format_size(reserved_bytes)));
    sizes.push_back(bytes);
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

size_result figures_of(const json& program, const std::vector<std::string>& errors,
                       const std::string& gpu, uint64_t bar1_bytes) {
  size_result s;
  s.bar1_bytes = bar1_bytes;
  s.errors = errors;
  for (const auto& b : program.at("bar1")) {
    if (b.at("gpu") != gpu) continue;
    s.reserved_bytes = b.at("reserved_bytes");
    s.peak_used_bytes = b.at("peak_used_bytes");
    s.get_pages_enomem = b.at("get_pages_enomem");
    s.peak_requested_bytes = b.at("peak_requested_bytes");
    s.peak_pinned_bytes = b.at("peak_pinned_bytes");
    s.peak_mapped_bytes = b.at("peak_mapped_bytes");
  }
  for (const auto& step : program.at("steps")) s.failed_steps += !step.at("ok").get<bool>();
  if (program.contains("regcache")) {
    const auto& c = program.at("regcache");
    s.evictions = c.at("evictions");
    s.hits = c.at("hits");
    s.misses = c.at("misses");
  }
  s.pinning_ns = program.at("driver").at("pinning_ns");
  return s;
}

std::optional<size_t> recommend(const std::vector<size_result>& sizes) {
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i].works()) return i;  // ascending: the first that works is the smallest
  return std::nullopt;
}

void print_report(std::ostream& os, const report& r) {
  if (r.sizes.empty()) return;  // nothing was run: no candidate to show
  os << fmt::format(
      "BAR1 sizing of {} (topology {}: BAR1 {} MiB, {} MiB reserved by the driver)\n\n", r.gpu,
      r.topology, mib(r.topology_bar1_bytes), mib(r.reserved_bytes));
  auto row = [&os](auto&&... columns) {
    std::string line = fmt::format(
        "{:>10}  {:>8}  {:>10}  {:>7}  {:>9}  {:>7}  {:>9}  {:>8}  {:>10}  {}", columns...);
    os << line.substr(0, line.find_last_not_of(' ') + 1) << "\n";
  };
  row("BAR1 Size", "Usable", "Peak Used", "Peak", "get_pages", "Failed", "Evictions", "Cache",
      "Pinning", "Result");
  row("(MiB)", "(MiB)", "(MiB)", "Used %", "-ENOMEM", "Steps", "", "Hit Rate", "Time (us)", "");
  os << std::string(105, '-') << "\n";
  for (const auto& s : r.sizes) {
    auto rate = s.hit_rate();
    row(mib(s.bar1_bytes), mib(s.usable_bytes()), mib(s.peak_used_bytes),
        fmt::format("{:.1f}%", s.peak_used_percent()), s.get_pages_enomem, s.failed_steps,
        s.evictions, rate ? fmt::format("{:.1f}%", *rate * 100) : "-",
        fmt::format("{:.1f}", s.pinning_ns / 1000), s.verdict());
  }
  // Which calls failed, so that a FAILED row can be traced to the program's steps.
  for (const auto& s : r.sizes)
    if (!s.errors.empty())
      os << fmt::format(
          "{:>10}: {}{}\n", mib(s.bar1_bytes), s.errors.front(),
          s.errors.size() > 1 ? fmt::format(" (and {} more)", s.errors.size() - 1) : "");
  const auto best = recommend(r.sizes);
  const size_result& shown = shown_run(r, best);
  const uint64_t rounding = shown.peak_pinned_bytes - shown.peak_requested_bytes;
  const uint64_t shared = shown.peak_pinned_bytes - shown.peak_mapped_bytes;
  os << fmt::format("\nAt the peak of the {} MiB run (BAR1 maps 64 KiB pages):\n",
                    mib(shown.bar1_bytes));
  auto line = [&](const char* what, const std::string& value) {
    os << fmt::format("    {:<36}: {}\n", what, value);
  };
  line("Requested by the pins", fmt::format("{} B ({} MiB)", grouped(shown.peak_requested_bytes),
                                            mib(shown.peak_requested_bytes)));
  line(
      "Rounded out to 64 KiB, pin by pin",
      fmt::format("{} B (+{} B of rounding)", grouped(shown.peak_pinned_bytes), grouped(rounding)));
  line("Mapped in BAR1, a shared page once",
       fmt::format("{} B (-{} B: {} page(s) shared by several pins)",
                   grouped(shown.peak_mapped_bytes), grouped(shared), shared / page_bytes));
  line("Reserved by the driver",
       fmt::format("{} B ({} MiB)", grouped(shown.reserved_bytes), mib(shown.reserved_bytes)));
  line("BAR1 Used",
       fmt::format("{} B ({} MiB, {:.1f}% of the aperture)", grouped(shown.peak_used_bytes),
                   mib(shown.peak_used_bytes), shown.peak_used_percent()));
  os << "\n";
  if (best) {
    os << fmt::format(
        "Recommended BAR1 size for {}: {} MiB, the smallest size tried with no pin failure\n",
        r.gpu, mib(r.sizes[*best].bar1_bytes));
    return;
  }
  os << fmt::format("No BAR1 size tried runs this workload without a pin failure. At {} MiB: ",
                    mib(shown.bar1_bytes));
  if (shown.get_pages_enomem)
    os << fmt::format("nvidia_p2p_get_pages returned -ENOMEM {} time(s)\n", shown.get_pages_enomem);
  else
    os << fmt::format("the program does not run as expected: {}\n", shown.errors.front());
}

json to_json(const report& r) {
  json j = {{"scenario", r.scenario},
            {"scenario_file", r.scenario_file},
            {"topology", r.topology},
            {"gpu", r.gpu},
            {"topology_bar1_bytes", r.topology_bar1_bytes},
            {"reserved_bytes", r.reserved_bytes},
            {"sizes", json::array()}};
  for (const auto& s : r.sizes) {
    auto rate = s.hit_rate();
    j["sizes"].push_back({{"bar1_bytes", s.bar1_bytes},
                          {"usable_bytes", s.usable_bytes()},
                          {"peak_used_bytes", s.peak_used_bytes},
                          {"peak_used_percent", s.peak_used_percent()},
                          {"get_pages_enomem", s.get_pages_enomem},
                          {"failed_steps", s.failed_steps},
                          {"evictions", s.evictions},
                          {"hits", s.hits},
                          {"misses", s.misses},
                          {"hit_rate", rate ? json(*rate) : json(nullptr)},
                          {"pinning_us", s.pinning_ns / 1000},
                          {"peak_requested_bytes", s.peak_requested_bytes},
                          {"peak_pinned_bytes", s.peak_pinned_bytes},
                          {"peak_mapped_bytes", s.peak_mapped_bytes},
                          {"rounding_bytes", s.peak_pinned_bytes - s.peak_requested_bytes},
                          {"sharing_saved_bytes", s.peak_pinned_bytes - s.peak_mapped_bytes},
                          {"works", s.works()},
                          {"verdict", s.verdict()},
                          {"errors", s.errors}});
  }
  auto best = recommend(r.sizes);
  j["recommended_bar1_bytes"] = best ? json(r.sizes[*best].bar1_bytes) : json(nullptr);
  return j;
}

std::string gnuplot_script(const report& r, const std::string& svg_file) {
  // Both axes in powers of two: a peak of a few hundred MiB stays visible next to apertures of
  // tens of GiB. The x range leaves room so that the first and last impulses are not drawn on
  // the border.
  const double low = double(r.sizes.front().bar1_bytes) / mib_bytes / 1.5;
  const double high = double(r.sizes.back().bar1_bytes) / mib_bytes * 1.5;
  std::string s = fmt::format(
      "set terminal svg size 800,480 dynamic background rgb 'white'\n"
      "set output '{}'\n"
      "set title 'BAR1 sizing of {} ({})' noenhanced\n"
      "set xlabel 'BAR1 size (MiB)'\nset logscale x 2\nset xrange [{}:{}]\n"
      "set ylabel 'MiB'\nset logscale y 2\n"
      "set y2label 'nvidia\\_p2p\\_get\\_pages -ENOMEM'\n"
      "set ytics nomirror\nset y2tics\nset y2range [0:*]\n"
      "set key outside bottom center horizontal\nset grid\n$runs << EOD\n",
      svg_file, r.gpu, r.scenario, low, high);
  for (const auto& x : r.sizes)
    s += fmt::format("{} {} {} {}\n", double(x.bar1_bytes) / mib_bytes,
                     double(x.peak_used_bytes) / mib_bytes, double(x.usable_bytes()) / mib_bytes,
                     x.get_pages_enomem);
  s += "EOD\n"
       "plot $runs using 1:2 with linespoints linewidth 2 title 'peak BAR1 used', \\\n"
       "     $runs using 1:3 with linespoints dashtype 2 title 'usable (BAR1 less reserved)', \\\n"
       "     $runs using 1:4 axes x1y2 with impulses linewidth 6 title 'pin failures (right "
       "axis)'\n";
  return s;
}

}  // namespace p2psim::core::bar1_sizing
