// The tables and the JSON of p2psim bench.
#include <fmt/format.h>

#include "sim/bench/bench.h"
#include "sim/config/units.h"

namespace p2psim::bench {

using nlohmann::json;

namespace {

// 1234567 -> "1.23 M": rates span several orders of magnitude between fidelities.
std::string si(double x) {
  if (x >= 1e9) return fmt::format("{:.2f} G", x / 1e9);
  if (x >= 1e6) return fmt::format("{:.2f} M", x / 1e6);
  if (x >= 1e3) return fmt::format("{:.2f} k", x / 1e3);
  return fmt::format("{:.0f}", x);
}

std::string mib(uint64_t kib) {
  return fmt::format("{:.0f}", double(kib) / 1024);
}

size_t name_width(const report& r) {
  size_t w = 14;
  for (const auto& c : r.cases) w = std::max(w, c.name.size() + 2);
  return w;
}

void print_runs(std::ostream& os, const report& r) {
  const size_t w = name_width(r);
  os << fmt::format("{:<{}}{:<11}{:>12}{:>13}{:>11}{:>14}{:>10}{:>9}{:>11}{:>11}{:>10}{:>9}\n",
                    "case", w, "fidelity", "TLPs", "TLP-hops", "in flight", "simulated ms",
                    "wall s", "data s", "TLPs/s", "hops/s", "RSS MiB", "GB/s");
  for (const auto& c : r.cases) {
    for (const auto* run : {c.tlp ? &*c.tlp : nullptr, c.burst ? &*c.burst : nullptr}) {
      if (!run) continue;
      os << fmt::format(
          "{:<{}}{:<11}{:>12}{:>13}{:>11}{:>14.3f}{:>10.2f}{:>9.2f}{:>11}{:>11}{:>10}{:>9.2f}\n",
          c.name, w, run->fidelity, run->tlps, run->hops, run->peak_in_flight,
          run->simulated_ns / 1e6, run->wall_seconds, run->data_wall_seconds,
          si(run->tlps_per_second()), si(run->hops_per_second()), mib(run->peak_rss_kib),
          run->gbps);
    }
    if (c.tlp && c.burst)
      os << fmt::format(
          "{:<{}}{:<11}{:>12}{:>13}{:>11}{:>14}{:>10}{:>9}{:>11}{:>11}{:>10}{:>+8.2f}%\n", c.name,
          w, "burst/tlp", "", "", "", "", fmt::format("x{:.2f}", c.burst_speedup()), "", "", "", "",
          c.gbps_difference_percent());
  }
  os << "\n";
}

void print_floor(std::ostream& os, const report& r) {
  bool any = false;
  for (const auto& c : r.cases) any |= c.floor.has_value();
  if (!any) return;
  const size_t w = name_width(r);
  os << "Floor: as many TLM-2.0 AT transactions and hops through trivial forwarders (one timed\n"
        "event per hop), and each fidelity's hop rate as a share of the floor's\n";
  os << fmt::format("{:<{}}{:>12}{:>9}{:>13}{:>10}{:>12}", "case", w, "txns", "hops/txn", "hops",
                    "wall s", "hops/s");
  for (const auto& f : r.fidelities) os << fmt::format("{:>14}{:>12}", f + " hops/s", f + "/floor");
  os << "\n";
  for (const auto& c : r.cases) {
    if (!c.floor) continue;
    const floor_figures& f = *c.floor;
    os << fmt::format("{:<{}}{:>12}{:>9.2f}{:>13}{:>10.2f}{:>12}", c.name, w, f.transactions,
                      f.hops_per_transaction(), f.hops, f.wall_seconds, si(f.hops_per_second()));
    for (const auto& fid : r.fidelities) {
      const auto& run = fid == "tlp" ? c.tlp : c.burst;
      if (run)
        os << fmt::format("{:>14}{:>11.1f}%", si(run->hops_per_second()), c.percent_of_floor(*run));
      else
        os << fmt::format("{:>14}{:>12}", "-", "-");
    }
    os << "\n";
  }
  os << "\n";
}

void print_scale(std::ostream& os, const report& r) {
  if (r.scale.empty()) return;
  os << fmt::format(
      "Scaling: {} at {} fidelity, sizes above {} moved as repetitions of it (wall per GiB "
      "stays flat when the cost grows linearly)\n",
      r.scale_case, r.scale_fidelity, config::format_size(r.scale_chunk));
  os << fmt::format("{:>10}{:>16}{:>12}{:>14}{:>10}{:>13}{:>10}{:>9}\n", "total", "moved as",
                    "TLPs", "simulated ms", "wall s", "wall s/GiB", "RSS MiB", "GB/s");
  for (const auto& p : r.scale)
    os << fmt::format("{:>10}{:>16}{:>12}{:>14.3f}{:>10.2f}{:>13.2f}{:>10}{:>9.2f}\n",
                      config::format_size(p.total_bytes),
                      fmt::format("{} x {}", p.count, config::format_size(p.size)), p.run.tlps,
                      p.run.simulated_ns / 1e6, p.run.wall_seconds, p.wall_per_gib(),
                      mib(p.run.peak_rss_kib), p.run.gbps);
  os << "\n";
}

}  // namespace

void print_report(std::ostream& os, const report& r) {
  std::string fids;
  for (const auto& f : r.fidelities) fids += (fids.empty() ? "" : " and ") + f;
  if (!r.cases.empty()) {
    os << fmt::format("p2psim bench: {} case{} at {} fidelity, from {}{}{}\n", r.cases.size(),
                      r.cases.size() == 1 ? "" : "s", fids, r.cases_dir,
                      r.size_factor != 1 ? fmt::format(", sizes x {}", r.size_factor) : "",
                      r.repeat > 1 ? fmt::format(", fastest of {} runs each", r.repeat) : "");
    os << "(wall s: the simulation's own, less data s spent filling data patterns; rates per "
          "wall second; GB/s simulated"
       << (r.cpu >= 0 ? fmt::format("; every run on CPU {}", r.cpu) : "") << ")\n\n";
    print_runs(os, r);
    print_floor(os, r);
  }
  print_scale(os, r);
  print_pin_runs(os, r.pins);
}

json to_json(const report& r) {
  json j;
  j["cases_dir"] = r.cases_dir;
  j["fidelities"] = r.fidelities;
  j["size_factor"] = r.size_factor;
  j["repeat"] = r.repeat;
  j["cpu"] = r.cpu >= 0 ? json(r.cpu) : json();
  j["cases"] = json::array();
  for (const auto& c : r.cases) {
    json cj = {{"name", c.name}, {"scenario", c.scenario}};
    cj["tlp"] = c.tlp ? to_json(*c.tlp) : json();
    cj["burst"] = c.burst ? to_json(*c.burst) : json();
    const bool both = c.tlp && c.burst;
    cj["burst_speedup"] = both ? json(c.burst_speedup()) : json();
    cj["gbps_difference_percent"] = both ? json(c.gbps_difference_percent()) : json();
    cj["floor"] = c.floor ? to_json(*c.floor) : json();
    cj["percent_of_floor"] = {
        {"tlp", c.floor && c.tlp ? json(c.percent_of_floor(*c.tlp)) : json()},
        {"burst", c.floor && c.burst ? json(c.percent_of_floor(*c.burst)) : json()}};
    j["cases"].push_back(cj);
  }
  if (!r.scale.empty()) {
    json points = json::array();
    for (const auto& p : r.scale)
      points.push_back({{"total_bytes", p.total_bytes},
                        {"size", p.size},
                        {"count", p.count},
                        {"wall_seconds_per_gib", p.wall_per_gib()},
                        {"run", to_json(p.run)}});
    j["scale"] = {{"case", r.scale_case},
                  {"fidelity", r.scale_fidelity},
                  {"chunk_bytes", r.scale_chunk},
                  {"points", points}};
  }
  if (!r.pins.empty()) {
    json runs = json::array();
    for (const auto& p : r.pins) runs.push_back(to_json(p));
    j["pins"] = {{"cycles", r.pin_cycles}, {"runs", runs}};
  }
  return j;
}

}  // namespace p2psim::bench
