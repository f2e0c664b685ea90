// p2psim bench --pins: what one pin/unpin cycle costs the driver models as cycles pile up.
// A pin must cost O(live pins), not O(pins ever made): the time per cycle in the last window
// of ten million cycles should be that of the first ten thousand, and what the models hold
// (live pins, kept events, kmd regions, resident memory) should not grow. The figures and
// their JSON; the cycles themselves run in pin_cycles.h.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace p2psim::bench {

// The kinds of cycle, each on a fresh driver with one GPU, in this order:
//   get_put     cuMemAlloc once; nvidia_p2p_get_pages + nvidia_p2p_put_pages with its tokens
//   alloc_free  cuMemAlloc, get_pages, put_pages, cuMemFree
//   revoke      cuMemAlloc, get_pages, cuMemFree: the free callback ends the pin (5.3)
//   kmd         cuMemAlloc once; the peer kmd's pin (get_pages + dma_map_pages) and unpin
//   regcache    cuMemAlloc, the registration cache's acquire and release (the region stays
//               pinned), cuMemFree (revoked); the next acquire finds the entry stale (6.5)
const std::vector<std::string>& pin_cycle_kinds();
// "get_put,kmd" -> the kinds; an unknown or empty item -> config::error naming `key`.
std::vector<std::string> parse_pin_cycle_kinds(const std::string& list, const std::string& key);

// After 1,000, 10,000, ... cycles (every power of ten from 1,000 below n) and after n.
std::vector<uint64_t> pin_checkpoints(uint64_t n);

struct pin_checkpoint {
  uint64_t cycles = 0;          // done so far
  double wall_seconds = 0;      // since the first cycle
  double ns_per_cycle = 0;      // wall, over the cycles since the previous checkpoint
  double cpu_ns_per_cycle = 0;  // CPU time of the process, over the same cycles
  uint64_t rss_kib = 0;         // resident memory of the process now
  uint64_t live_pins = 0;       // what the models hold now: bounded by the live pins (none
  uint64_t events_kept = 0;     // between cycles), whatever the cycles so far
  uint64_t kmd_regions = 0;
  uint64_t driver_contexts = 0;
};

struct pin_run {
  std::string kind;
  uint64_t cycles = 0;
  std::vector<pin_checkpoint> checkpoints;
  // The driver's counters at the end: every cycle pinned once and released or revoked once.
  uint64_t pins = 0, unpins = 0, callbacks = 0, refused = 0, events_dropped = 0;
};

nlohmann::json to_json(const pin_run& r);
void print_pin_runs(std::ostream& os, const std::vector<pin_run>& runs);

}  // namespace p2psim::bench
