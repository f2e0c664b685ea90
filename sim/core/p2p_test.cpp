#include "sim/core/p2p_test.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "models/gpu/gpu_spec.h"
#include "sim/core/runner.h"

namespace p2psim::core::p2p_test {

namespace {

std::string pair_name(const char* what, size_t i, size_t j) {
  return fmt::format("{}_{}_{}", what, i, j);
}

// The sample's phases, once with peer access disabled (prefix `d`) and once enabled (`e`):
// each device copies to each (itself included) alone on its stream; then both ways at once,
// the other way on a second stream; then a 4-byte copy queued behind another, timed from that
// one's completion (what the sample's events around a batch of them measure, per copy).
void phases(std::string& y, size_t n, char mode, uint64_t bytes) {
  auto step = [&](const std::string& s) { y += "  - {process: app, " + s + "}\n"; };
  for (size_t i = 0; i < n; ++i) {
    step(fmt::format("call: cuCtxSetCurrent, context: c{}", i));
    for (size_t j = 0; j < n; ++j) {
      step(
          fmt::format("call: cuMemcpyDtoD, buffer: src{}, to: dst{}, size: {}B, async: true, "
                      "stream: s{}, name: {}",
                      i, j, bytes, i, pair_name(mode == 'd' ? "ud" : "ue", i, j)));
      step(fmt::format("call: cuStreamSynchronize, stream: s{}", i));
    }
    for (size_t j = 0; j < n; ++j) {
      const std::string a = pair_name(mode == 'd' ? "bda" : "bea", i, j);
      const std::string b = pair_name(mode == 'd' ? "bdb" : "beb", i, j);
      step(
          fmt::format("call: cuMemcpyDtoD, buffer: src{}, to: dst{}, size: {}B, async: true, "
                      "stream: s{}, name: {}",
                      i, j, bytes, i, a));
      step(
          fmt::format("call: cuMemcpyDtoD, buffer: src{}, to: back{}, size: {}B, async: true, "
                      "stream: t{}, name: {}, since: {}",
                      j, i, bytes, i, b, a));
      step(fmt::format("call: cuStreamSynchronize, stream: s{}", i));
      step(fmt::format("call: cuStreamSynchronize, stream: t{}", i));
    }
    for (size_t j = 0; j < n; ++j) {
      const std::string warm = pair_name(mode == 'd' ? "wd" : "we", i, j);
      step(
          fmt::format("call: cuMemcpyDtoD, buffer: src{}, to: dst{}, size: 4B, async: true, "
                      "stream: s{}, name: {}",
                      i, j, i, warm));
      step(
          fmt::format("call: cuMemcpyDtoD, buffer: src{}, to: dst{}, size: 4B, async: true, "
                      "stream: s{}, name: {}, after: {}",
                      i, j, i, pair_name(mode == 'd' ? "ld" : "le", i, j), warm));
      step(fmt::format("call: cuStreamSynchronize, stream: s{}", i));
    }
  }
}

}  // namespace

std::vector<device> gpus(const topo::topology& t, const topo::address_map& a) {
  std::vector<device> out;
  for (const auto& d : t.devices)
    if (d.spec<gpu::gpu_spec>()) out.push_back({d.name, d.model, a.devices.at(d.name).bdf});
  return out;
}

std::vector<std::vector<bool>> access(const topo::topology& t, const topo::address_map& a,
                                      const std::vector<device>& gpus) {
  std::vector<std::vector<bool>> out(gpus.size(), std::vector<bool>(gpus.size(), false));
  for (size_t i = 0; i < gpus.size(); ++i)
    for (size_t j = 0; j < gpus.size(); ++j)
      out[i][j] = peer_reachable(t, a, gpus[i].name, gpus[j].name);
  return out;
}

std::string scenario_yaml(const std::string& topology_file, const std::vector<device>& gpus,
                          const std::vector<std::vector<bool>>& access, const options& o) {
  const size_t n = gpus.size();
  std::string y =
      "# Written by p2psim p2p: p2pBandwidthLatencyTest's copies (sim/core/p2p_test.h).\n";
  y += "name: p2p_bandwidth_latency\n";
  y += fmt::format("topology: {}\n", topology_file);
  y += fmt::format("fidelity: {}\n", o.fidelity);
  y += "processes: [app]\nprogram:\n";
  auto step = [&](const std::string& s) { y += "  - {process: app, " + s + "}\n"; };
  step("call: cuInit");
  for (size_t i = 0; i < n; ++i) {
    step(fmt::format("call: cuCtxCreate, device: {}, name: c{}", gpus[i].name, i));
    for (const char* b : {"src", "dst", "back"})
      step(fmt::format("call: cuMemAlloc, name: {}{}, size: {}B", b, i, o.bytes));
    step(fmt::format("call: cuStreamCreate, name: s{}", i));
    step(fmt::format("call: cuStreamCreate, name: t{}", i));
  }
  phases(y, n, 'd', o.bytes);
  for (size_t i = 0; i < n; ++i) {
    step(fmt::format("call: cuCtxSetCurrent, context: c{}", i));
    for (size_t j = 0; j < n; ++j)
      if (j != i)
        step(fmt::format("call: cuCtxEnablePeerAccess, context: c{}{}", j,
                         access[i][j] ? "" : ", expect: CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"));
  }
  phases(y, n, 'e', o.bytes);
  return y;
}

figures from_run(const run_result& r, const std::vector<device>& gpus,
                 const std::vector<std::vector<bool>>& access, uint64_t bytes) {
  std::map<std::string, double> s;
  for (const auto& b : r.bandwidth) s[b.transfer] = b.seconds;
  std::map<std::string, double> call_us;  // how long each named step's call took
  if (!r.program.is_null())
    for (const auto& st : r.program["steps"])
      if (st.contains("name"))
        call_us[st["name"].get<std::string>()] =
            (st["end_ns"].get<double>() - st["start_ns"].get<double>()) / 1e3;
  auto call = [&](const std::string& name) {
    auto it = call_us.find(name);
    if (it == call_us.end()) throw std::runtime_error("p2psim p2p: the run has no step " + name);
    return it->second;
  };
  auto at = [&](const std::string& name) {
    auto it = s.find(name);
    if (it == s.end() || it->second <= 0)
      throw std::runtime_error("p2psim p2p: the run has no time for copy " + name);
    return it->second;
  };
  const size_t n = gpus.size();
  figures f;
  f.devices = gpus;
  f.access = access;
  f.bytes = bytes;
  auto matrix = [&] { return figures::matrix(n, std::vector<double>(n, 0)); };
  f.uni_disabled = f.uni_enabled = f.bi_disabled = f.bi_enabled = matrix();
  f.latency_disabled = f.latency_enabled = matrix();
  f.cpu_latency_disabled = f.cpu_latency_enabled = matrix();
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      f.uni_disabled[i][j] = bytes / at(pair_name("ud", i, j)) * 1e-9;
      f.uni_enabled[i][j] = bytes / at(pair_name("ue", i, j)) * 1e-9;
      // Both ways: twice the bytes over the time both took (the second timed from the first's
      // call, so the later end is the longer time).
      f.bi_disabled[i][j] =
          2.0 * bytes / std::max(at(pair_name("bda", i, j)), at(pair_name("bdb", i, j))) * 1e-9;
      f.bi_enabled[i][j] =
          2.0 * bytes / std::max(at(pair_name("bea", i, j)), at(pair_name("beb", i, j))) * 1e-9;
      f.latency_disabled[i][j] = at(pair_name("ld", i, j)) * 1e6;
      f.latency_enabled[i][j] = at(pair_name("le", i, j)) * 1e6;
      f.cpu_latency_disabled[i][j] = call(pair_name("ld", i, j));
      f.cpu_latency_enabled[i][j] = call(pair_name("le", i, j));
    }
  return f;
}

namespace {

// `title` (none: the rows go on under the previous matrix's, as the sample's CPU latency rows do).
void print_matrix(std::ostream& out, const std::string& title, const char* corner,
                  const figures::matrix& m) {
  if (!title.empty()) out << title << "\n";
  out << fmt::format("   {}", corner);
  for (size_t j = 0; j < m.size(); ++j) out << fmt::format("{:6d} ", j);
  out << "\n";
  for (size_t i = 0; i < m.size(); ++i) {
    out << fmt::format("{:6d} ", i);
    for (double v : m[i]) out << fmt::format("{:6.02f} ", v);
    out << "\n";
  }
}

}  // namespace

void print(std::ostream& out, const figures& f, const std::string& topology_file) {
  const size_t n = f.devices.size();
  out << "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\n";
  out << fmt::format("(p2psim on {}: {} bytes per copy)\n", topology_file, f.bytes);
  for (size_t i = 0; i < n; ++i) {
    const auto& d = f.devices[i];
    out << fmt::format("Device: {}, {}{}, pciBusID: {:x}, pciDeviceID: {:x}, pciDomainID:0\n", i,
                       d.name, d.model.empty() ? "" : " (" + d.model + ")", topo::bus_of(d.bdf),
                       (d.bdf >> 3) & 0x1f);
  }
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      if (i != j)
        out << fmt::format("Device={} {} Access Peer Device={}\n", i,
                           f.access[i][j] ? "CAN" : "CANNOT", j);
  out << "\n***NOTE: In case a device doesn't have P2P access to other one, it falls back to "
         "normal memcopy procedure.\nSo you can see lesser Bandwidth (GB/s) in those cases.\n\n";
  out << "P2P Connectivity Matrix\n     D\\D";
  for (size_t j = 0; j < n; ++j) out << fmt::format("{:6d}", j);
  out << "\n";
  for (size_t i = 0; i < n; ++i) {
    out << fmt::format("{:6d}\t", i);
    for (size_t j = 0; j < n; ++j) out << fmt::format("{:6d}", i == j || f.access[i][j] ? 1 : 0);
    out << "\n";
  }
  print_matrix(out, "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)", "D\\D", f.uni_disabled);
  print_matrix(out, "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)", "D\\D",
               f.uni_enabled);
  print_matrix(out, "Bidirectional P2P=Disabled Bandwidth Matrix (GB/s)", "D\\D", f.bi_disabled);
  print_matrix(out, "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)", "D\\D", f.bi_enabled);
  print_matrix(out, "P2P=Disabled Latency Matrix (us)", "GPU", f.latency_disabled);
  print_matrix(out, "", "CPU", f.cpu_latency_disabled);
  print_matrix(out, "P2P=Enabled Latency (P2P Writes) Matrix (us)", "GPU", f.latency_enabled);
  print_matrix(out, "", "CPU", f.cpu_latency_enabled);
  out << "\nNOTE: The CUDA Samples are not meant for performance measurements. Results may vary "
         "when GPU Boost is enabled.\n";
}

nlohmann::json to_json(const figures& f) {
  nlohmann::json j;
  j["bytes_per_copy"] = f.bytes;
  j["devices"] = nlohmann::json::array();
  for (const auto& d : f.devices)
    j["devices"].push_back({{"name", d.name}, {"model", d.model}, {"bus", topo::bus_of(d.bdf)}});
  j["can_access_peer"] = f.access;
  j["unidirectional_gbps"] = {{"p2p_disabled", f.uni_disabled}, {"p2p_enabled", f.uni_enabled}};
  j["bidirectional_gbps"] = {{"p2p_disabled", f.bi_disabled}, {"p2p_enabled", f.bi_enabled}};
  j["latency_us"] = {{"p2p_disabled", f.latency_disabled}, {"p2p_enabled", f.latency_enabled}};
  j["cpu_latency_us"] = {{"p2p_disabled", f.cpu_latency_disabled},
                         {"p2p_enabled", f.cpu_latency_enabled}};
  return j;
}

}  // namespace p2psim::core::p2p_test
