#include <fmt/format.h>

#include "sim/bench/pins.h"
#include "sim/config/error.h"

namespace p2psim::bench {

using nlohmann::json;

const std::vector<std::string>& pin_cycle_kinds() {
  static const std::vector<std::string> kinds = {"get_put", "alloc_free", "revoke", "kmd",
                                                 "regcache"};
  return kinds;
}

std::vector<std::string> parse_pin_cycle_kinds(const std::string& list, const std::string& key) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = list.find(',', start);
    const std::string item = list.substr(start, comma == std::string::npos ? comma : comma - start);
    bool known = false;
    for (const auto& k : pin_cycle_kinds()) known |= k == item;
    if (!known)
      throw config::error(
          config::source_loc{}, key,
          fmt::format("no pin cycle '{}' (get_put, alloc_free, revoke, kmd, regcache)", item));
    out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<uint64_t> pin_checkpoints(uint64_t n) {
  std::vector<uint64_t> out;
  for (uint64_t c = 1000; c < n; c *= 10) out.push_back(c);
  if (n > 0) out.push_back(n);
  return out;
}

json to_json(const pin_run& r) {
  json points = json::array();
  for (const auto& c : r.checkpoints)
    points.push_back({{"cycles", c.cycles},
                      {"wall_seconds", c.wall_seconds},
                      {"ns_per_cycle", c.ns_per_cycle},
                      {"cpu_ns_per_cycle", c.cpu_ns_per_cycle},
                      {"rss_kib", c.rss_kib},
                      {"live_pins", c.live_pins},
                      {"events_kept", c.events_kept},
                      {"kmd_regions", c.kmd_regions},
                      {"driver_contexts", c.driver_contexts}});
  return {{"kind", r.kind},
          {"cycles", r.cycles},
          {"checkpoints", points},
          {"driver",
           {{"pins", r.pins},
            {"unpins", r.unpins},
            {"callbacks", r.callbacks},
            {"refused", r.refused},
            {"events_dropped", r.events_dropped}}}};
}

void print_pin_runs(std::ostream& os, const std::vector<pin_run>& runs) {
  if (runs.empty()) return;
  os << "Pin/unpin cycles: wall and CPU ns per cycle over the window since the previous "
        "checkpoint (flat when a pin costs O(live pins), not O(history)); what the models hold "
        "after it\n";
  os << fmt::format("{:<12}{:>12}{:>10}{:>12}{:>12}{:>10}{:>11}{:>9}{:>9}\n", "cycle", "cycles",
                    "wall s", "ns/cycle", "CPU ns/cyc", "RSS MiB", "live pins", "events",
                    "regions");
  for (const auto& r : runs)
    for (const auto& c : r.checkpoints)
      os << fmt::format("{:<12}{:>12}{:>10.2f}{:>12.0f}{:>12.0f}{:>10.1f}{:>11}{:>9}{:>9}\n",
                        r.kind, c.cycles, c.wall_seconds, c.ns_per_cycle, c.cpu_ns_per_cycle,
                        c.rss_kib / 1024.0, c.live_pins, c.events_kept, c.kmd_regions);
  os << "\n";
}

}  // namespace p2psim::bench
