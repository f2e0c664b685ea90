// p2psim bench's plain logic: what each `p2psim run` child and each floor child reported, the
// rates worked out from it, the split of a scaling study's sizes into repetitions, and the
// tables and JSON of the report. No SystemC: the simulations run in child processes.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/bench/pins.h"

namespace p2psim::bench {

// One `p2psim run` of a case, from its --json document.
struct run_figures {
  std::string fidelity;
  uint64_t tlps = 0;  // TLPs simulated (in burst fidelity: those the bursts stand for)
  uint64_t hops = 0;  // TLP-hops: link traversals, every link summed
  // The most TLPs (bursts at burst fidelity) in flight at once, the largest of the runs':
  // the working set a TLP-hop's cost grows with.
  uint64_t peak_in_flight = 0;
  uint64_t simulated_ns = 0;
  // The simulation's own cost: the runs' wall time less data_wall_seconds.
  double wall_seconds = 0;
  double data_wall_seconds = 0;  // filling data patterns and verifying bytes
  uint64_t peak_rss_kib = 0;
  uint64_t bytes = 0;  // moved by the transfers
  double gbps = 0;     // bytes over the simulated time the transfers took, GB = 1e9 B

  double tlps_per_second() const { return wall_seconds > 0 ? tlps / wall_seconds : 0; }
  double hops_per_second() const { return wall_seconds > 0 ? hops / wall_seconds : 0; }
};

// Reads a `p2psim run --json` document (every topology's run summed).
run_figures figures_of_run(const nlohmann::json& run_json);
nlohmann::json to_json(const run_figures& f);

// The floor (sim/bench/floor.h): trivial TLM-2.0 forwarders moving as many transactions
// through as many hops as a case's TLPs took.
struct floor_figures {
  uint64_t transactions = 0;  // that reached the sink
  uint64_t hops = 0;          // timed hop events that fired
  uint64_t simulated_ns = 0;
  double wall_seconds = 0;  // elaboration and simulation
  uint64_t peak_rss_kib = 0;
  uint64_t peak_in_flight = 0;  // the most transactions alive at once (its pool's size)

  double hops_per_second() const { return wall_seconds > 0 ? hops / wall_seconds : 0; }
  double hops_per_transaction() const { return transactions ? double(hops) / transactions : 0; }
};

nlohmann::json to_json(const floor_figures& f);
floor_figures floor_from_json(const nlohmann::json& j);

// What the hidden `bench --floor TXNS,HOPS[,IN_FLIGHT]` option asks for: HOPS in all, 1 to
// 64 per transaction; IN_FLIGHT transactions alive at once (0 or left out: about three, as
// a fabric with nothing queued holds). Bad text -> config::error.
struct floor_shape {
  uint64_t transactions = 0, hops = 0, in_flight = 0;
  bool operator==(const floor_shape&) const = default;
};
floor_shape parse_floor_size(const std::string& text);

struct case_result {
  std::string name;
  std::string scenario;  // the case's file
  std::optional<run_figures> tlp, burst;
  std::optional<floor_figures> floor;

  // The floor's size: the case's TLPs and TLP-hops (at least one and at most 64 hops per
  // TLP). The TLP run's when there is one; a burst run's TLPs stand for the same TLPs.
  std::pair<uint64_t, uint64_t> floor_size() const;
  // Simulation wall at TLP fidelity over that at burst fidelity (0 without both).
  double burst_speedup() const;
  // How far burst fidelity's bandwidth is from TLP fidelity's, in percent (0 without both).
  double gbps_difference_percent() const;
  // A run's hop rate as a share of the floor's, in percent (0 without a floor).
  double percent_of_floor(const run_figures& run) const;
};

// A scaling study: one case's transfer at several total sizes.
struct scale_point {
  uint64_t total_bytes = 0;
  uint64_t size = 0;  // bytes per repetition
  int count = 1;      // repetitions
  run_figures run;

  double wall_per_gib() const;
};

// Moves `total` bytes as repetitions of at most `chunk` (a bounded memory footprint): one
// transfer of `total` when it fits, else `total / chunk` repetitions of `chunk`. A total
// above `chunk` that is not a multiple of it -> config::error naming `key`.
struct size_split {
  uint64_t size = 0;
  int count = 1;
};
size_split split_total(uint64_t total, uint64_t chunk, const std::string& key);
// "256MiB,1GiB,4GiB" -> bytes; empty items, bad units or 0 -> config::error naming `key`.
std::vector<uint64_t> parse_sizes(const std::string& list, const std::string& key);
// `bytes` times `factor`, to a whole number of 4 KiB pages (at least one), so a shrunk case
// still moves full-size TLPs.
uint64_t scale_size(uint64_t bytes, double factor);

struct report {
  std::string cases_dir;
  std::vector<std::string> fidelities;  // "tlp", "burst"
  double size_factor = 1;
  int repeat = 1;  // each case's runs and floor ran this many times; the fastest is shown
  int cpu = -1;    // the CPU they all ran on (-1: not pinned)
  std::vector<case_result> cases;
  std::string scale_case;  // the case a scaling study ran, and at which fidelity
  std::string scale_fidelity;
  uint64_t scale_chunk = 0;
  std::vector<scale_point> scale;
  uint64_t pin_cycles = 0;  // --pins: cycles of each kind run (0: none)
  std::vector<pin_run> pins;
};

void print_report(std::ostream& os, const report& r);
nlohmann::json to_json(const report& r);

}  // namespace p2psim::bench
