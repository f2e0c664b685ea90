#include "sim/core/runner.h"
#include "sim/core/burst_warnings.h"
#include "sim/core/watchdog.h"

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <sysc/kernel/sc_dynamic_processes.h>  // sc_spawn

#include "models/gpu/gpu_spec.h"
#include "models/transport/sim_clock.h"
#include "models/transport/tlp_txn.h"
#include "sim/config/error.h"
#include "sim/core/byte_pattern.h"
#include "sim/core/endpoints.h"
#include "sim/core/peak_rss.h"
#include "sim/core/program_runner.h"
#include "sim/core/stats_dump.h"
#include "sim/core/system.h"
#include "sim/topology/topology_graph.h"

namespace p2psim::core {

using namespace sc_core;

namespace {

constexpr uint64_t slot_align = 64 * 1024;
uint64_t slot_bytes(uint64_t size) {
  return (size + slot_align - 1) / slot_align * slot_align;
}

// Where each transfer's streams start in the target's and the initiator's memory: transfers
// that run at the same time (`start: with_previous`) get regions of their own.
std::vector<uint64_t> base_offsets(const scenario& s) {
  std::vector<uint64_t> base(s.transfers.size(), 0);
  for (size_t i = 1; i < s.transfers.size(); ++i) {
    const auto& prev = s.transfers[i - 1];
    if (s.transfers[i].with_previous)
      base[i] = base[i - 1] +
                uint64_t(prev.concurrency) * slot_bytes(std::max(prev.size, s.latency_size));
  }
  return base;
}

constexpr size_t chunk = 1 << 20;  // multiple of 8: patterns continue seamlessly across chunks

void fill_pattern(memory::backing_store& s, uint64_t offset, uint64_t bytes, uint64_t seed) {
  byte_pattern p(seed);
  std::vector<uint8_t> buf(chunk);
  for (uint64_t done = 0; done < bytes; done += chunk) {
    size_t n = std::min<uint64_t>(chunk, bytes - done);
    p.next(std::span<uint8_t>(buf.data(), n));
    s.write(offset + done, std::span<const uint8_t>(buf.data(), n));
  }
}

// Bytes of `s` that differ from the pattern `seed` (a store nothing should have written).
uint64_t count_changed(memory::backing_store& s, uint64_t offset, uint64_t bytes, uint64_t seed) {
  byte_pattern p(seed);
  std::vector<uint8_t> want(chunk), got(chunk);
  uint64_t bad = 0;
  for (uint64_t done = 0; done < bytes; done += chunk) {
    size_t n = std::min<uint64_t>(chunk, bytes - done);
    p.next(std::span<uint8_t>(want.data(), n));
    s.read(offset + done, std::span<uint8_t>(got.data(), n));
    for (size_t i = 0; i < n; ++i) bad += want[i] != got[i];
  }
  return bad;
}

uint64_t count_mismatches(memory::backing_store& a, uint64_t ao, memory::backing_store& b,
                          uint64_t bo, uint64_t bytes) {
  std::vector<uint8_t> x(chunk), y(chunk);
  uint64_t bad = 0;
  for (uint64_t done = 0; done < bytes; done += chunk) {
    size_t n = std::min<uint64_t>(chunk, bytes - done);
    a.read(ao + done, std::span<uint8_t>(x.data(), n));
    b.read(bo + done, std::span<uint8_t>(y.data(), n));
    for (size_t i = 0; i < n; ++i) bad += x[i] != y[i];
  }
  return bad;
}

class job_submitter : public sc_module {
 public:
  SC_HAS_PROCESS(job_submitter);
  job_submitter(sc_module_name n, fabric_system& sys, const scenario& s, run_result& out)
      : sc_module(n), m_sys(sys), m_sc(s), m_out(out) {
    SC_THREAD(main);
  }
  // What it was doing, if it never got to the end (the event queue ran dry under it).
  const std::string& stuck_at() const { return m_doing; }

 private:
  struct outcome {
    uint64_t bytes = 0, failed = 0, mismatched = 0;
    uint64_t leaked = 0;  // bytes of a refused transfer that changed the destination anyway
    uint64_t t0 = 0, t1 = 0;
  };

  // Moves `size` bytes per stream on `streams` streams at once and verifies them.
  outcome move(const transfer_spec& t, uint64_t size, int streams, uint64_t seed,
               uint64_t base = 0) {
    dma::dma_initiator& init = *m_sys.find_initiator(t.initiator);
    const region_options ro{t.map_bar1, m_sys.iommu_for(t.initiator), t.iommu_map, t.write};
    transport::stream_log& log = m_sys.streams();
    std::vector<std::unique_ptr<target_region>> regions;
    std::vector<uint32_t> ids;
    auto data0 = std::chrono::steady_clock::now();
    for (int i = 0; i < streams; ++i) {
      uint64_t off = base + uint64_t(i) * slot_bytes(size);
      regions.push_back(std::make_unique<target_region>(m_sys, t.target, off, size, ro));
      auto& reg = *regions.back();
      // Source gets a fresh pattern, the destination its complement: stale bytes show.
      // Unverified runs (sweeps, benchmarks) move the memory's zeros instead: nothing would
      // read the patterns, and filling them costs more wall time and RSS than the simulation.
      if (!m_sc.verify) continue;
      if (t.write) {
        fill_pattern(init.local_memory(), off, size, seed + i);
        fill_pattern(reg.store(), reg.offset(), size, ~(seed + i));
      } else {
        fill_pattern(reg.store(), reg.offset(), size, seed + i);
        fill_pattern(init.local_memory(), off, size, ~(seed + i));
      }
    }
    count_data_wall(data0);
    for (int i = 0; i < streams; ++i) {
      auto& reg = *regions[i];
      uint64_t off = base + uint64_t(i) * slot_bytes(size);
      uint32_t id = log.open(size);
      log[id].submit_ps = transport::now_ps();
      ids.push_back(id);
      dma::dma_job job;
      job.write = t.write;
      job.segments.push_back({reg.bus_address(), size, off});
      job.attrs = t.attrs;
      job.stream = id;
      init.submit(std::move(job));
    }
    transport::wait_until_landed(log, ids);

    outcome o;
    o.t0 = UINT64_MAX;
    data0 = std::chrono::steady_clock::now();
    for (int i = 0; i < streams; ++i) {
      const auto& r = log[ids[i]];
      o.t0 = std::min(o.t0, r.has_started ? r.first_start_ps : r.submit_ps);
      o.t1 = std::max(o.t1, r.last_land_ps);
      o.failed += r.failed_bytes;
      o.bytes += r.landed_bytes;
      if (!m_sc.verify) continue;
      uint64_t off = base + uint64_t(i) * slot_bytes(size);
      auto& reg = *regions[i];
      if (r.failed_bytes == 0) {  // everything landed: it must equal the source
        o.mismatched +=
            t.write ? count_mismatches(init.local_memory(), off, reg.store(), reg.offset(), size)
                    : count_mismatches(reg.store(), reg.offset(), init.local_memory(), off, size);
      } else if (r.landed_bytes == 0) {  // all refused: the destination must be untouched
        o.leaked += t.write ? count_changed(reg.store(), reg.offset(), size, ~(seed + i))
                            : count_changed(init.local_memory(), off, size, ~(seed + i));
      }
    }
    count_data_wall(data0);
    return o;
  }

  // Wall time spent making and checking the bytes rather than simulating (kept apart, so a
  // benchmark can report the simulation's own cost).
  void count_data_wall(std::chrono::steady_clock::time_point since) {
    m_out.data_wall_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
  }

  bandwidth_result bandwidth(const transfer_spec& t, size_t index, uint64_t base) {
    bandwidth_result b;
    b.transfer = t.name;
    b.src = t.initiator;
    b.dst = t.target;
    b.op = t.write ? "write" : "read";
    uint64_t ps_total = 0;
    for (int rep = 0; rep < t.count; ++rep) {
      outcome o =
          move(t, t.size, t.concurrency, m_sc.seed * 1000003 + index * 1009 + rep * 31, base);
      b.bytes += o.bytes;
      b.failed_bytes += o.failed;
      b.mismatched_bytes += o.mismatched + o.leaked;
      ps_total += o.t1 > o.t0 ? o.t1 - o.t0 : 0;
    }
    b.seconds = ps_total * 1e-12;
    b.gbps = ps_total ? double(b.bytes) / double(ps_total) * 1000.0 : 0;
    if (b.failed_bytes)
      m_out.errors.push_back(
          fmt::format("{}: {} bytes refused by the fabric", t.name, b.failed_bytes));
    if (b.mismatched_bytes)
      m_out.errors.push_back(fmt::format(
          "{}: {} bytes differ from what the destination should hold", t.name, b.mismatched_bytes));
    return b;
  }

  // Transfers [first, last) at the same time, each in a thread of its own; results in order.
  void bandwidth_group(size_t first, size_t last, const std::vector<uint64_t>& base) {
    std::vector<bandwidth_result> results(last - first);
    std::vector<sc_process_handle> threads;
    for (size_t i = first; i < last; ++i)
      threads.push_back(sc_spawn([this, i, first, &base, &results] {
        results[i - first] = bandwidth(m_sc.transfers[i], i, base[i]);
      }));
    for (auto& h : threads)
      if (!h.terminated()) wait(h.terminated_event());
    for (auto& b : results) m_out.bandwidth.push_back(std::move(b));
  }

  void latency(const transfer_spec& t) {
    latency_result l;
    l.src = t.initiator;
    l.dst = t.target;
    l.op = t.write ? "write" : "read";
    l.bytes = m_sc.latency_size;
    l.samples = m_sc.latency_samples;
    uint64_t total = 0;
    for (int i = 0; i < m_sc.latency_samples; ++i) {
      outcome o = move(t, m_sc.latency_size, 1, m_sc.seed + 7919 * i);
      total += o.t1 - o.t0;
      if (o.failed || o.mismatched)
        m_out.errors.push_back(
            fmt::format("latency probe {} -> {} lost data", t.initiator, t.target));
    }
    l.ns = double(total) / m_sc.latency_samples / 1000.0;
    m_out.latency.push_back(l);
  }

  void main() {
    m_doing = "starting";
    const std::vector<uint64_t> base = base_offsets(m_sc);
    if (m_sc.measure_bandwidth)
      for (size_t i = 0; i < m_sc.transfers.size();) {
        size_t last = i + 1;
        while (last < m_sc.transfers.size() && m_sc.transfers[last].with_previous) ++last;
        m_doing = "transfer '" + m_sc.transfers[i].name + "'";
        bandwidth_group(i, last, base);
        i = last;
      }
    m_doing = "latency probes";
    if (m_sc.measure_latency) {
      std::set<std::tuple<std::string, std::string, bool>> seen;
      for (const auto& t : m_sc.transfers)
        if (seen.insert({t.initiator, t.target, t.write}).second) latency(t);
    }
    // Nothing is left in flight: sc_start returns when the event queue runs dry.
    m_doing.clear();
  }

  fabric_system& m_sys;
  const scenario& m_sc;
  run_result& m_out;
  std::string m_doing;
};

}  // namespace

std::string refusal_reason(const topo::topology& t, const topo::address_map& a,
                           const transfer_spec& x) {
  if (!t.find_device(x.initiator)) return "";
  const auto& sock = *t.find_socket(a.socket_of.at(x.initiator));
  if (sock.iommu.mode == iommu::iommu_mode::translating && !x.iommu_map)
    return fmt::format(
        "the IOMMU of {} translates and the target was not mapped for {} (iommu_map: false): "
        "DMA remapping fault, the request was blocked",
        sock.name, x.initiator);
  if (!t.find_device(x.target)) return "";
  auto type = topo::classify(t, x.initiator, x.target);
  const auto& from = *t.find_socket(a.socket_of.at(x.initiator));
  const auto& plat = from.platform;
  const char* op = x.write ? "write" : "read";
  if (type == topo::path_type::PHB || type == topo::path_type::NODE) {
    if (!(x.write ? plat.p2p.write : plat.p2p.read).routed)
      return fmt::format(
          "platform {} does not route peer-to-peer {}s between root ports: "
          "its root complex answers Unsupported Request",
          from.platform_name, op);
  } else if (type == topo::path_type::SYS) {
    if (!(x.write ? plat.interconnect_p2p_write : plat.interconnect_p2p_read).routed)
      return fmt::format(
          "platform {} does not route peer-to-peer {}s across the socket "
          "interconnect: Unsupported Request",
          from.platform_name, op);
  }
  return "";
}

bool peer_reachable(const topo::topology& t, const topo::address_map& a, const std::string& from,
                    const std::string& to) {
  if (from == to) return false;
  for (bool write : {true, false}) {
    transfer_spec x;
    x.initiator = from;
    x.target = to;
    x.write = write;
    if (!refusal_reason(t, a, x).empty()) return false;
  }
  return true;
}

void check_scenario(const scenario& s, const topo::topology& t, const topo::address_map& a) {
  check_program(s.program, t);
  const std::vector<uint64_t> base = base_offsets(s);
  for (size_t k = 0; k < s.transfers.size(); ++k) {
    const auto& x = s.transfers[k];
    const auto* init = t.find_device(x.initiator);
    if (!init)
      throw config::error(x.loc, "initiator",
                          fmt::format("'{}' is not a device in {}", x.initiator, t.file));
    if (!init->kind().initiates_dma())
      throw config::error(
          x.loc, "initiator",
          fmt::format("'{}' is a {}, which starts no DMA", x.initiator, init->kind().title()));
    const auto* dev = t.find_device(x.target);
    if (!dev && !t.find_socket(x.target))
      throw config::error(x.loc, "target",
                          fmt::format("'{}' is not a device or socket in {}", x.target, t.file));
    // Transfers that run together take regions one after another.
    uint64_t need =
        base[k] + uint64_t(x.concurrency) * slot_bytes(std::max(x.size, s.latency_size));
    uint64_t cap = target_capacity(t, a, x.target);
    if (dev && cap == 0)
      throw config::error(x.loc, "target",
                          fmt::format("'{}' exposes no memory to peers (type {}, as set)", x.target,
                                      dev->kind().name()));
    if (need > cap)
      throw config::error(
          x.loc, "size",
          fmt::format(
              "{} streams of {} bytes{} need {} bytes on {}, which exposes {} bytes{}",
              x.concurrency, x.size,
              base[k] ? " (after those of the transfers running with it)" : "", need, x.target, cap,
              dev && dev->spec<gpu::gpu_spec>() ? " (BAR1 less its driver-reserved region)" : ""));
    if (need > initiator_capacity(t, x.initiator))
      throw config::error(
          x.loc, "size",
          fmt::format("{} bytes do not fit the local memory of {}", need, x.initiator));
  }
}

run_result run_topology(const scenario& s, const topo::topology& t, const topo::address_map& a,
                        const pcie::order_policy& order) {
  check_scenario(s, t, a);
  run_result r;
  r.scenario = s.name;
  r.topology = t.name;
  r.topology_file = t.file;
  r.description = t.description;
  auto wall0 = std::chrono::steady_clock::now();
  fabric_system sys(t, a, s.fidelity == fidelity::burst, order);
  job_submitter jobs("job_submitter", sys, s, r);
  std::unique_ptr<program_runner> prog;
  if (!s.program.empty())
    prog = std::make_unique<program_runner>("program", sys, s.program, s.seed);
  watchdog dog{std::chrono::duration<double>(s.watchdog_seconds)};
  sc_start();
  if (!dog.verdict().empty())
    throw std::runtime_error(
        fmt::format("the simulation of {} was stopped by the watchdog: {}", t.name, dog.verdict()));
  // sc_start returns when no event is left: if the job submitter's or the program's thread had not
  // finished, something in the fabric model waits forever (a deadlock). Say where, rather than
  // report partial results.
  std::string stuck = jobs.stuck_at();
  if (stuck.empty() && prog) stuck = prog->stuck_at();
  if (!stuck.empty()) {
    std::string blocked;
    for (const auto& b : sys.blocked_links()) blocked += "\n    " + b;
    throw std::runtime_error(fmt::format(
        "the simulation of {} stalled at {:.3f} us during {}: nothing is left to happen but "
        "it has not finished (a deadlock in the model){}",
        t.name, sc_time_stamp().to_seconds() * 1e6, stuck,
        blocked.empty() ? "" : "; blocked:" + blocked));
  }
  // Every TLP sent was freed by its receiver, once: flow-control credits are conserved.
  if (auto unbalanced = sys.unbalanced_credits(); !unbalanced.empty()) {
    std::string where;
    for (const auto& u : unbalanced) where += "\n    " + u;
    throw std::logic_error(fmt::format(
        "the simulation of {} ended with flow-control credits out of balance (a model error: "
        "a receiver freed a TLP's buffer twice, with another size, or never):{}",
        t.name, where));
  }
  if (prog) {
    r.program = prog->results();
    for (auto& c : prog->copy_results()) r.bandwidth.push_back(std::move(c));
    for (const auto& e : prog->errors()) r.errors.push_back(e);
  }
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  r.simulated_ns = uint64_t(sc_time_stamp().to_seconds() * 1e9 + 0.5);
  r.tlps = sys.pool().tlps();
  r.peak_in_flight = sys.pool().peak_alive();
  r.fidelity = to_string(s.fidelity);
  for (const auto& l : sys.links())
    r.hops += l.link->downstream().stats().tlps + l.link->upstream().stats().tlps;
  for (const auto& q : sys.interconnects())
    r.hops += q.link->a_to_b().stats().tlps + q.link->b_to_a().stats().tlps;
  r.peak_rss_kib = peak_rss_kib();
  topo::fabric_graph g(t);
  for (auto& b : r.bandwidth) {
    if (t.find_device(b.src) && t.find_device(b.dst)) {
      auto p = g.classify(b.src, b.dst);
      b.path = topo::to_string(p);
      b.topology_class = topo::topology_class(p);
    }
  }
  // Each transfer's rows with refused bytes, counted by name first: looking through every
  // row for each transfer took 16.8 M string comparisons with 4,096 transfers.
  std::unordered_map<std::string_view, int> refused_rows;
  for (const auto& b : r.bandwidth)
    if (b.failed_bytes) ++refused_rows[b.transfer];
  for (const auto& x : s.transfers)
    if (auto it = refused_rows.find(x.name); it != refused_rows.end())
      if (auto why = refusal_reason(t, a, x); !why.empty())
        for (int i = 0; i < it->second; ++i) r.errors.push_back(fmt::format("{}: {}", x.name, why));
  r.stats = dump_stats(sys, r.simulated_ns);
  r.warnings = t.warnings;  // what the topology chose on the user's behalf
  if (s.fidelity == fidelity::burst)
    for (auto& w : burst_warnings(sys, t, r.stats)) r.warnings.push_back(std::move(w));
  return r;
}

}  // namespace p2psim::core
