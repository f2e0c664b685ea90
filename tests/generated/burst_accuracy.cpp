#include "tests/generated/burst_accuracy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace p2psim::oracle {

double factor_off(double burst_gbps, double tlp_gbps) {
  if (burst_gbps <= 0 || tlp_gbps <= 0) return burst_gbps == tlp_gbps ? 1 : HUGE_VAL;
  return std::max(burst_gbps / tlp_gbps, tlp_gbps / burst_gbps);
}

size_t burst_accuracy::bin_of(double factor) {
  size_t i = 0;
  while (i < std::size(bins) && factor > bins[i]) ++i;
  return i;
}

void burst_accuracy::tally::add(const transfer& t) {
  const double f = factor_off(t.burst_gbps, t.tlp_gbps);
  ++transfers;
  const size_t bin = bin_of(f);
  ++by_bin[bin];
  if (bin > 0 && t.burst_gbps < t.tlp_gbps) ++slow;
  if (f > worst) worst = f, worst_at = t.name, worst_change = t.burst_gbps / t.tlp_gbps - 1;
}

void burst_accuracy::add_case(const std::vector<transfer>& transfers, bool any_warning) {
  ++m_cases;
  bool within = true;
  for (const transfer& t : transfers) {
    (t.warned ? m_warned : m_unwarned).add(t);
    within = within && bin_of(factor_off(t.burst_gbps, t.tlp_gbps)) == 0;
  }
  if (any_warning) {
    ++m_warned_cases;
    m_warned_cases_within += within;
  }
}

namespace {
// As the findings put it below twice (-1.57%: burst fidelity reports 1.57% less), as a factor
// from there (46.0x faster).
std::string change_text(double factor, double change) {
  if (factor < 2) return fmt::format("{:+.2f}%", change * 100);
  return fmt::format("{:.1f}x {}", factor, change > 0 ? "faster" : "slower");
}

std::string tally_line(const char* what, const burst_accuracy::tally& t) {
  std::string line = fmt::format("  {:<24}{:>7} transfers:", what, t.transfers);
  const char* bins[] = {"within 1%", "1-5%", "5-25%", "25%-2x", "beyond 2x"};
  for (size_t i = 0; i < burst_accuracy::bin_count; ++i)
    line +=
        fmt::format(" {} {}{}", t.by_bin[i], bins[i], i + 1 < burst_accuracy::bin_count ? "," : "");
  const uint64_t off = t.transfers - t.by_bin[0];
  if (off)
    line += fmt::format("; of those off, {} slow at burst fidelity; worst {} ({})", t.slow,
                        change_text(t.worst, t.worst_change), t.worst_at);
  return line;
}
}  // namespace

std::string burst_accuracy::report() const {
  return fmt::format(
      "burst against TLP fidelity, bandwidth per transfer over {} cases:\n{}\n{}\n"
      "  cases with a burst warning: {} of {}; of those, {} had every transfer within 1%\n",
      m_cases, tally_line("no warning on its path", m_unwarned),
      tally_line("a warning on its path", m_warned), m_warned_cases, m_cases,
      m_warned_cases_within);
}

}  // namespace p2psim::oracle
