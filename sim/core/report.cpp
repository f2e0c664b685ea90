#include "sim/core/report.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include <fmt/format.h>

#include "sim/config/units.h"

namespace p2psim::core {

namespace {

const char* class_name(int c) {
  switch (c) {
    case 1:
      return "PCIe switches only";
    case 2:
      return "single CPU/IOH";
    case 3:
      return "CPU/IOH <-> QPI/UPI <-> CPU/IOH";
  }
  return "-";
}

std::vector<std::string> devices_of(const run_result& r) {
  std::vector<std::string> names;
  auto add = [&](const std::string& n) {
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  };
  for (const auto& b : r.bandwidth)
    if (b.call.empty()) add(b.src), add(b.dst);
  for (const auto& l : r.latency) add(l.src), add(l.dst);
  // Natural order, as nvidia-smi lists devices: gpu2 before gpu10.
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    auto split = [](const std::string& s) {
      size_t i = s.find_last_not_of("0123456789") + 1;
      return std::make_pair(s.substr(0, i), i < s.size() ? std::stoull(s.substr(i)) : 0ull);
    };
    return split(a) < split(b);
  });
  return names;
}

void matrix(std::ostream& os, const std::string& title, const std::vector<std::string>& names,
            const std::map<std::pair<std::string, std::string>, double>& cells, int precision) {
  if (cells.empty()) return;
  size_t w = 8;
  for (const auto& n : names) w = std::max(w, n.size() + 2);
  os << title << "\n" << fmt::format("{:>{}}", "D\\D", w);
  for (const auto& n : names) os << fmt::format("{:>{}}", n, w);
  os << "\n";
  for (const auto& row : names) {
    os << fmt::format("{:>{}}", row, w);
    for (const auto& col : names) {
      auto it = cells.find({row, col});
      if (it == cells.end())
        os << fmt::format("{:>{}}", row == col ? "X" : "-", w);
      else
        os << fmt::format("{:>{}.{}f}", it->second, w, precision);
    }
    os << "\n";
  }
  os << "\n";
}

// The program's outcome: nvidia-smi's BAR1 Memory Usage block per GPU, the driver's and the
// registration cache's counts, and each DMA.
void print_program(std::ostream& os, const nlohmann::json& p) {
  size_t failed = 0;
  for (const auto& s : p["steps"]) failed += !s["ok"].get<bool>();
  os << fmt::format("Program: {} steps, {}\n", p["steps"].size(),
                    failed ? fmt::format("{} not as expected", failed) : "all as expected");
  auto mib = [](const nlohmann::json& v) { return v.get<uint64_t>() >> 20; };
  for (const auto& b : p["bar1"]) {
    os << fmt::format("    {}\n        BAR1 Memory Usage\n", b["gpu"].get<std::string>());
    os << fmt::format("            Total                             : {} MiB\n",
                      mib(b["total_bytes"]));
    os << fmt::format("            Used                              : {} MiB\n",
                      mib(b["used_bytes"]));
    os << fmt::format("            Free                              : {} MiB\n",
                      mib(b["free_bytes"]));
    os << fmt::format("            Peak Used                         : {} MiB\n",
                      mib(b["peak_used_bytes"]));
  }
  const auto& d = p["driver"];
  os << fmt::format(
      "    nv-p2p: {} pins, {} unpins, {} free callbacks, {} refused calls; "
      "pinning took {:.3f} ms\n",
      d["pins"].get<uint64_t>(), d["unpins"].get<uint64_t>(), d["callbacks"].get<uint64_t>(),
      d["refused_calls"].get<uint64_t>(), d["pinning_ns"].get<double>() / 1e6);
  if (d.value("dma_buf_exports", uint64_t(0)))
    os << fmt::format(
        "    dma-buf: {} exports, {} maps and {} unmaps by importers (their BAR1 mapping is "
        "in the pinning time)\n",
        d["dma_buf_exports"].get<uint64_t>(), d["dma_buf_maps"].get<uint64_t>(),
        d["dma_buf_unmaps"].get<uint64_t>());
  if (p.contains("regcache")) {
    const auto& c = p["regcache"];
    os << fmt::format(
        "    registration cache: {} hits, {} misses, {} evictions, {} retries "
        "after -ENOMEM, {} stale (buffer ID); {} pins of host memory\n",
        c["hits"].get<uint64_t>(), c["misses"].get<uint64_t>(), c["evictions"].get<uint64_t>(),
        c["enomem_retries"].get<uint64_t>(), c["tag_invalidations"].get<uint64_t>(),
        c["host_pins"].get<uint64_t>());
  }
  if (p.contains("rdma")) {
    const auto& r = p["rdma"];
    os << fmt::format(
        "    RDMA memory regions (nvidia-peermem): {} registered, {} refused, {} deregistered, "
        "{} invalidated ({} waited for accesses in flight); {} remote accesses refused\n",
        r["registrations"].get<uint64_t>(), r["refused_registrations"].get<uint64_t>(),
        r["deregistrations"].get<uint64_t>(), r["invalidations"].get<uint64_t>(),
        r["invalidations_that_waited"].get<uint64_t>(), r["refused_accesses"].get<uint64_t>());
  }
  if (!p["dma"].empty()) {
    size_t w = 14;  // the name column: the longest name and a space
    for (const auto& x : p["dma"]) w = std::max(w, x["name"].get<std::string>().size() + 1);
    os << fmt::format("    {:<{}}{:<7}{:>12}{:>12}{:>12}{:>10}{:>10}{:>10}{:>10}\n", "DMA", w, "op",
                      "bytes", "landed", "refused", "lost", "timed out", "escaped", "GB/s");
    for (const auto& x : p["dma"])
      os << fmt::format("    {:<{}}{:<7}{:>12}{:>12}{:>12}{:>10}{:>10}{:>10}{:>10.2f}\n",
                        x["name"].get<std::string>(), w, x["op"].get<std::string>(),
                        x["bytes"].get<uint64_t>(), x["landed_bytes"].get<uint64_t>(),
                        x["failed_bytes"].get<uint64_t>(), x["lost_bytes"].get<uint64_t>(),
                        x["timed_out_bytes"].get<uint64_t>(), x["escaped_bytes"].get<uint64_t>(),
                        x["gbps"].get<double>());
    os << "    (GB/s over each DMA's span, pinning pauses included; refused: UR, CA, unmapped\n"
          "     BAR1 or an IOMMU fault; lost: dropped by a link that went down; timed out: read\n"
          "     completions that never came; escaped: bytes found where they were not allowed)\n";
  }
  for (const auto& e : d["events"])
    if (e["what"] != "free callback")
      os << fmt::format("    driver: {}: {}\n", e["what"].get<std::string>(),
                        e["detail"].get<std::string>());
  os << "\n";
}

// A program's named cuMemcpy steps: what each took, as CUDA would time it.
void print_copies(std::ostream& os, const run_result& r) {
  bool any = false;
  for (const auto& b : r.bandwidth) {
    if (b.call.empty()) continue;
    if (!any)
      os << fmt::format("CUDA copies\n    {:<16}{:<20}{:<6}{:>12}{:>12}{:>10}\n", "name", "call",
                        "GPU", "bytes", "us", "GB/s");
    any = true;
    os << fmt::format("    {:<16}{:<20}{:<6}{:>12}{:>12.3f}{:>10.2f}\n", b.transfer,
                      b.call + (b.async ? "Async" : ""), b.src, b.bytes, b.seconds * 1e6, b.gbps);
  }
  if (any)
    os << "    (us: from the call to its return for a synchronous copy, to the copy's completion\n"
          "     for an asynchronous one, as CUDA events around it measure; docs/architecture.md,\n"
          "     \"CUDA copy costs\")\n\n";
}

// The scenario's matrix as p2pBandwidthLatencyTest prints it: the listed devices in their
// order, the diagonal blank (a device does not move data to itself here), and a pair whose
// transfer is not in this run (its bandwidth was not measured) as "-".
void print_transfer_matrix(std::ostream& os, const run_result& r, const transfer_matrix& m) {
  std::map<std::string, double> gbps;
  for (const auto& b : r.bandwidth) gbps[b.transfer] = b.gbps;
  size_t w = 8;
  for (const auto& n : m.devices) w = std::max(w, n.size() + 2);
  os << fmt::format(
      "Unidirectional P2P {} bandwidth matrix (GB/s), {} per pair, {}\n",
      m.write ? "write" : "read", config::format_size(m.size),
      m.write ? "initiator (row) -> target (column)" : "initiator (row) reads target (column)");
  os << fmt::format("{:>{}}", "D\\D", w);
  for (const auto& n : m.devices) os << fmt::format("{:>{}}", n, w);
  os << "\n";
  for (const auto& src : m.devices) {
    std::string row = fmt::format("{:>{}}", src, w);
    for (const auto& dst : m.devices) {
      auto it = gbps.find(matrix_transfer_name(src, dst));
      if (src == dst)
        row += fmt::format("{:>{}}", "", w);
      else if (it == gbps.end())
        row += fmt::format("{:>{}}", "-", w);
      else
        row += fmt::format("{:>{}.2f}", it->second, w);
    }
    os << row.substr(0, row.find_last_not_of(' ') + 1) << "\n";  // a blank last diagonal
  }
  os << "\n";
}

}  // namespace

namespace {

// The link directions that were busiest, from the run's stats: where concurrent streams
// meet, the one near 100% is the bottleneck.
void print_busiest_links(std::ostream& os, const run_result& r) {
  struct busy {
    std::string link, direction;
    double utilization = 0, payload_gbps = 0;
    uint64_t credit_stalls = 0;
  };
  std::vector<busy> all;
  auto add = [&](const std::string& link, const std::string& dir, const nlohmann::json& c) {
    if (!c.is_object()) return;
    double ns = double(r.simulated_ns);
    all.push_back({link, dir, c.value("utilization_ratio", 0.0),
                   ns > 0 ? c.value("payload_bytes", 0.0) / ns : 0.0,
                   c.value("credit_stalls", uint64_t(0))});
  };
  if (!r.stats.is_object()) return;
  const nlohmann::json links = r.stats.value("links", nlohmann::json::object());
  const nlohmann::json between = r.stats.value("interconnects", nlohmann::json::object());
  for (const auto& [name, l] : links.items()) {
    add("link " + name, "down", l.value("downstream", nlohmann::json()));
    add("link " + name, "up", l.value("upstream", nlohmann::json()));
  }
  for (const auto& [name, q] : between.items()) {
    add(name, "a->b", q.value("a_to_b", nlohmann::json()));
    add(name, "b->a", q.value("b_to_a", nlohmann::json()));
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const busy& a, const busy& b) { return a.utilization > b.utilization; });
  if (all.empty() || all.front().utilization <= 0) return;
  os << "Busiest links (share of the simulated time each direction was sending)\n";
  os << fmt::format("    {:<16} {:>5} {:>7} {:>13} {:>14}\n", "link", "dir", "busy %",
                    "payload GB/s", "credit stalls");
  for (size_t i = 0; i < std::min<size_t>(all.size(), 5) && all[i].utilization > 0; ++i)
    os << fmt::format("    {:<16} {:>5} {:>7.1f} {:>13.2f} {:>14}{}\n", all[i].link,
                      all[i].direction, 100 * all[i].utilization, all[i].payload_gbps,
                      all[i].credit_stalls, all[i].utilization >= 0.9 ? "  <- bottleneck" : "");
  os << "\n";
}

}  // namespace

void print_run(std::ostream& os, const run_result& r, const transfer_matrix* scenario_matrix) {
  os << fmt::format("=== Topology {} ({})\n", r.topology, r.topology_file);
  if (!r.description.empty()) os << "    " << r.description << "\n";
  std::set<std::pair<std::string, std::string>> shown;
  for (const auto& b : r.bandwidth)
    if (!b.path.empty() && shown.insert({b.src, b.dst}).second)
      os << fmt::format("    {} -> {}: path {}, GPUDirect RDMA class {} ({})\n", b.src, b.dst,
                        b.path, b.topology_class, class_name(b.topology_class));
  os << "\n";
  auto names = devices_of(r);
  std::map<std::pair<std::string, std::string>, double> wr, rd, wl, rl;
  for (const auto& b : r.bandwidth)
    if (b.call.empty()) (b.op == "write" ? wr : rd)[{b.src, b.dst}] = b.gbps;
  for (const auto& l : r.latency) (l.op == "write" ? wl : rl)[{l.src, l.dst}] = l.ns / 1000.0;
  matrix(os, "Unidirectional P2P write bandwidth (GB/s), initiator (row) -> target (column)", names,
         wr, 2);
  matrix(os, "Unidirectional P2P read bandwidth (GB/s), initiator (row) reads target (column)",
         names, rd, 2);
  if (!r.latency.empty()) {
    std::string size = fmt::format("{} B", r.latency.front().bytes);
    matrix(os, "P2P write latency (us), " + size + ", initiator (row) -> target (column)", names,
           wl, 2);
    matrix(os, "P2P read latency (us), " + size + ", initiator (row) reads target (column)", names,
           rl, 2);
  }
  if (scenario_matrix) print_transfer_matrix(os, r, *scenario_matrix);
  if (!r.program.is_null()) print_program(os, r.program);
  print_copies(os, r);
  print_busiest_links(os, r);
  os << fmt::format("Simulated {:.3f} ms, {} TLPs, {:.2f} s wall ({:.0f} TLPs/s)\n",
                    r.simulated_ns / 1e6, r.tlps, r.wall_seconds,
                    r.wall_seconds > 0 ? r.tlps / r.wall_seconds : 0.0);
  for (const auto& w : r.warnings) os << "warning: " << w << "\n";
  for (const auto& e : r.errors) os << "ERROR: " << e << "\n";
  os << "\n";
}

void print_comparison(std::ostream& os, const std::vector<run_result>& runs) {
  if (runs.empty()) return;
  // Columns: each transfer by name (GB/s), then each latency probe (us).
  std::vector<std::string> transfers, probes;
  for (const auto& r : runs) {
    for (const auto& b : r.bandwidth)
      if (std::find(transfers.begin(), transfers.end(), b.transfer) == transfers.end())
        transfers.push_back(b.transfer);
    for (const auto& l : r.latency) {
      std::string p = l.op + " lat";
      if (std::find(probes.begin(), probes.end(), p) == probes.end()) probes.push_back(p);
    }
  }
  size_t tw = 10;
  for (const auto& r : runs) tw = std::max(tw, r.topology.size() + 2);
  os << "=== P2P across the GPUDirect RDMA topology classes (GB/s with GB = 1e9 B; latency in "
        "us)\n";
  // A column is 12 wide, or wider for a long transfer name, so names never run together.
  auto width = [](const std::string& name) { return std::max<size_t>(12, name.size() + 2); };
  os << fmt::format("{:<{}}{:<6}{:<36}", "topology", tw, "path", "class");
  for (const auto& t : transfers) os << fmt::format("{:>{}}", t, width(t));
  for (const auto& p : probes) os << fmt::format("{:>{}}", p, width(p));
  os << "\n";
  for (const auto& r : runs) {
    std::string path = "-", cls = "-";
    for (const auto& b : r.bandwidth)
      if (!b.path.empty()) {
        path = b.path;
        cls = fmt::format("{}: {}", b.topology_class, class_name(b.topology_class));
        break;
      }
    os << fmt::format("{:<{}}{:<6}{:<36}", r.topology, tw, path, cls);
    for (const auto& t : transfers) {
      auto it = std::find_if(r.bandwidth.begin(), r.bandwidth.end(),
                             [&](const auto& b) { return b.transfer == t; });
      os << (it == r.bandwidth.end() ? fmt::format("{:>{}}", "-", width(t))
                                     : fmt::format("{:>{}.2f}", it->gbps, width(t)));
    }
    for (const auto& p : probes) {
      auto it = std::find_if(r.latency.begin(), r.latency.end(),
                             [&](const auto& l) { return l.op + " lat" == p; });
      os << (it == r.latency.end() ? fmt::format("{:>{}}", "-", width(p))
                                   : fmt::format("{:>{}.2f}", it->ns / 1000.0, width(p)));
    }
    os << "\n";
  }
  os << "\n";
}

}  // namespace p2psim::core
