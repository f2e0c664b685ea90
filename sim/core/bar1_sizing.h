// Sizing a GPU's BAR1 for a workload (`p2psim bar1`): which aperture sizes to try, what the
// scenario's program showed at each, the smallest that works, and the report as text and
// JSON. Plain C++ with no simulated time: each size runs in a child process of its own
// (SystemC elaborates once per process) and this reads what the runs wrote.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace p2psim::core::bar1_sizing {

// The figures of one run of the program at one BAR1 size, for the GPU being sized.
struct size_result {
  uint64_t bar1_bytes = 0;
  uint64_t reserved_bytes = 0;    // the driver's own region, never usable for peers (5.5)
  uint64_t peak_used_bytes = 0;   // nvidia-smi's BAR1 Used at its peak, reserved included
  uint64_t get_pages_enomem = 0;  // nvidia_p2p_get_pages refused: BAR1 was full
  uint64_t failed_steps = 0;      // program steps that did not return what they expect
  uint64_t evictions = 0, hits = 0, misses = 0;  // every process's registration cache
  double pinning_ns = 0;                         // pinning and unpinning, simulated
  // At the peak: bytes the pins asked for, the same rounded out to 64 KiB pages per pin, and
  // what BAR1 maps (less than the rounded bytes when pins share pages).
  uint64_t peak_requested_bytes = 0, peak_pinned_bytes = 0, peak_mapped_bytes = 0;
  std::vector<std::string> errors;  // what went wrong in the run, as `p2psim run` says it

  uint64_t usable_bytes() const { return bar1_bytes - reserved_bytes; }
  double peak_used_percent() const;
  std::optional<double> hit_rate() const;  // nullopt: the caches were never asked
  // No pin failure and nothing else went wrong: this size is enough for the workload.
  bool works() const { return get_pages_enomem == 0 && errors.empty(); }
  // "ok", "ENOMEM, recovered" (the caches evicted and retried) or "FAILED".
  std::string verdict() const;
};

struct report {
  std::string scenario, scenario_file, topology, gpu;
  uint64_t topology_bar1_bytes = 0;  // the GPU's BAR1 in the topology file
  uint64_t reserved_bytes = 0;
  std::vector<size_result> sizes;  // ascending
};

inline constexpr uint64_t smallest_default_bytes = 256ull << 20;  // Kepler's BAR1 (guide 5.5)

// The powers of two from 256 MiB up to the topology's BAR1 size, and that size; only those
// larger than the reserved region, which must leave room for a peer mapping.
std::vector<uint64_t> default_candidates(uint64_t bar1_bytes, uint64_t reserved_bytes);

// "256MiB,16GiB" (units of config::parse_size) -> ascending, without duplicates. Anything that
// is not a power of two of at least 64 KiB and larger than the reserved region is a
// config::error at "--sizes" (exit code 2).
std::vector<uint64_t> parse_candidates(const std::string& list, uint64_t reserved_bytes);

// The figures of a run (`program` as in run_result::program, `errors` as in run_result::errors)
// for `gpu`, run with a BAR1 of `bar1_bytes`.
size_result figures_of(const nlohmann::json& program, const std::vector<std::string>& errors,
                       const std::string& gpu, uint64_t bar1_bytes);

// The smallest size that works; nullopt if none does.
std::optional<size_t> recommend(const std::vector<size_result>& sizes);

// The table, the rounding and sharing figures at the recommended size (or the largest), and
// the recommendation or why there is none.
void print_report(std::ostream& os, const report& r);
nlohmann::json to_json(const report& r);

// A gnuplot script drawing peak use and pin failures against the BAR1 size into `svg_file`.
std::string gnuplot_script(const report& r, const std::string& svg_file);

}  // namespace p2psim::core::bar1_sizing
