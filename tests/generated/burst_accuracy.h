// How far burst fidelity is from TLP fidelity over many generated machines: every transfer's
// two bandwidths, whether the burst run warned about its path, and the summary `make soak`
// prints (docs/testing.md, "How far burst fidelity is from TLP fidelity"). Without it, a run
// only says which cases broke the 1% rule unwarned; this says how wrong burst fidelity is on
// an arbitrary machine, warned or not, and how often a warning is a false alarm.
#pragma once

#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

namespace p2psim::oracle {

// The factor between two bandwidths, 1 or more whichever is larger: 2 is "half" or "twice".
double factor_off(double burst_gbps, double tlp_gbps);

class burst_accuracy {
 public:
  // One transfer of case `name`: its bandwidth at each fidelity and whether a warning of the
  // burst run named a link or interconnect of its group's paths.
  struct transfer {
    std::string name;  // "gen-S tN"
    double tlp_gbps = 0, burst_gbps = 0;
    bool warned = false;
  };
  // One case: its transfers and whether its burst run warned at all.
  void add_case(const std::vector<transfer>& transfers, bool any_warning);

  // Factors a transfer may be off by, the upper ends of the report's bins (the last is open).
  static constexpr double bins[] = {1.01, 1.05, 1.25, 2.0};
  static constexpr size_t bin_count = std::size(bins) + 1;
  static size_t bin_of(double factor);

  struct tally {
    uint64_t transfers = 0;
    uint64_t by_bin[bin_count] = {};
    uint64_t slow = 0;  // of those more than 1% off, burst fidelity reported less bandwidth
    double worst = 1;   // the largest factor, and where
    std::string worst_at;
    double worst_change = 0;  // there: burst over TLP fidelity, less 1
    void add(const transfer& t);
  };
  const tally& warned() const { return m_warned; }
  const tally& unwarned() const { return m_unwarned; }
  uint64_t cases() const { return m_cases; }
  uint64_t warned_cases() const { return m_warned_cases; }
  // Cases with a burst warning whose transfers were all within 1%: the warning's false alarms.
  uint64_t warned_cases_within() const { return m_warned_cases_within; }
  // The summary, a few lines.
  std::string report() const;

 private:
  tally m_warned, m_unwarned;
  uint64_t m_cases = 0, m_warned_cases = 0, m_warned_cases_within = 0;
};

}  // namespace p2psim::oracle
