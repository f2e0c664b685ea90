// Statistics declared where they are counted. A model keeps its counters in a plain struct and,
// next to it, a table that gives each one the key it has in the results (`--json`, under
// `stats`), its unit and one line of description; the results and the tables in docs/ are
// generated from it (sim/core/stats_dump, docs/formats-scenario.md, "Stats").
//
//   struct switch_stats { uint64_t forwarded = 0; ... };
//   inline const stats::table<switch_stats>& switch_stat_table() {
//     static const stats::table<switch_stats> t{
//         stats::counter("forwarded_tlps", &switch_stats::forwarded, stats::unit::tlps,
//                        "TLPs forwarded from an ingress to an egress port."), ...};
//     return t;
//   }
//
// Plain C++ with no dependency but the standard library.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace p2psim::stats {

enum class unit { count, tlps, bytes, picoseconds, pages, ratio };

struct declaration {
  std::string key;  // as the results name it
  stats::unit unit = stats::unit::count;
  std::string description;
};

template <class Stats>
struct stat : declaration {
  // A counter read from the struct, or a ratio derived from it and the simulated time.
  std::function<uint64_t(const Stats&)> count;
  std::function<double(const Stats&, uint64_t simulated_ps)> ratio;
};

template <class Stats>
using table = std::vector<stat<Stats>>;

template <class Stats, class M>
stat<Stats> counter(std::string key, M Stats::*m, stats::unit u, std::string description) {
  stat<Stats> s;
  s.key = std::move(key);
  s.unit = u;
  s.description = std::move(description);
  s.count = [m](const Stats& x) { return uint64_t(x.*m); };
  return s;
}

// A share of the simulated time: `busy` picoseconds out of all of them.
template <class Stats, class M>
stat<Stats> time_share(std::string key, M Stats::*busy, std::string description) {
  stat<Stats> s;
  s.key = std::move(key);
  s.unit = stats::unit::ratio;
  s.description = std::move(description);
  s.ratio = [busy](const Stats& x, uint64_t simulated_ps) {
    return simulated_ps > 0 ? double(x.*busy) / double(simulated_ps) : 0.0;
  };
  return s;
}

inline const char* to_string(unit u) {
  switch (u) {
    case unit::count:
      return "count";
    case unit::tlps:
      return "TLPs";
    case unit::bytes:
      return "bytes";
    case unit::picoseconds:
      return "ps";
    case unit::pages:
      return "pages";
    case unit::ratio:
      return "ratio";
  }
  return "";
}

// One stat's value at the end of a run, for code that does not know the stats struct (a device
// kind's stats, models/device/device_kind.h): a count, or a ratio when `is_ratio`.
struct reading {
  const declaration* decl;
  uint64_t count = 0;
  double ratio = 0;
  bool is_ratio = false;
};

template <class Stats>
std::vector<reading> read(const table<Stats>& t, const Stats& s, uint64_t simulated_ps) {
  std::vector<reading> out;
  for (const auto& st : t)
    if (st.count)
      out.push_back({&st, st.count(s), 0, false});
    else
      out.push_back({&st, 0, st.ratio(s, simulated_ps), true});
  return out;
}

template <class Stats>
std::vector<const declaration*> declarations(const table<Stats>& t) {
  std::vector<const declaration*> out;
  for (const auto& st : t) out.push_back(&st);
  return out;
}

}  // namespace p2psim::stats
