// generated_check: differential and invariant testing of p2psim on generated machines
// (docs/testing.md, "Generated machines"). For each seed, sim/generate writes a random machine
// and workload; p2psim runs it at TLP fidelity and twice at burst fidelity, and every result
// must hold against oracles that share none of the simulator's code:
//
// - every transfer lands every byte (verify: true), none refused, none mismatched;
// - no bandwidth above, and no latency below, the independent bounds of the path
//   (independent_bounds.h), at either fidelity;
// - burst fidelity within 1% of TLP fidelity for each transfer and latency probe, unless the
//   burst run warns, naming a link or socket interconnect of that path, that it approximates
//   there;
// - the same seed generates the same files and the same JSON (less the `host` blocks);
// - every switch forwards the payload it takes in: bytes in = bytes out.
//
// With --summary it also prints how far burst fidelity was from TLP fidelity over all the
// cases, warned or not (burst_accuracy.h). With --sweep it checks the same of the one-device
// sweep (one_device_sweep.h) instead of seeds, --first and --count picking its cases.
//
// Exit status 0 when every case holds, 1 when one does not (each finding on a line of its
// own, with the command that reproduces it), 2 on bad arguments.
#include <sys/wait.h>

#include <atomic>
#include <thread>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "sim/generate/generate.h"
#include "tests/generated/burst_accuracy.h"
#include "tests/generated/independent_bounds.h"
#include "tests/generated/one_device_sweep.h"

namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using p2psim::generate::generated_case;

struct options {
  uint64_t first = 1, count = 10;
  std::string p2psim, platforms, dir;
  bool keep = false;
  bool verbose = false;
  bool summary = false;  // print how far burst fidelity was from TLP fidelity (burst_accuracy.h)
  bool sweep = false;    // the one-device sweep's cases, not seeds
  unsigned jobs = 1;     // cases checked at once
  std::vector<std::string> scenarios;  // regression cases: NAME.yaml beside NAME.topology.yaml
  std::string known;                   // open findings: "SEED  why" lines (known_findings.txt)
};

// Seeds with a finding that is open, each with what is known of it. Such a seed's findings
// are printed as known and do not fail the run; once it holds, the run fails until the line
// goes, so the list cannot outlive the bugs.
std::map<uint64_t, std::string> read_known(const std::string& path) {
  std::map<uint64_t, std::string> out;
  if (path.empty()) return out;
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    uint64_t seed = 0;
    in >> seed;
    std::string why;
    std::getline(in, why);
    out[seed] = why;
  }
  return out;
}

// What one case found, and its transfers' bandwidths at both fidelities for the summary.
struct findings {
  std::vector<std::string> lines;
  void add(const std::string& s) { lines.push_back(s); }
  std::vector<p2psim::oracle::burst_accuracy::transfer> transfers;
  bool any_warning = false;  // the burst run warned of something
  std::string summary;       // the generated case, for --verbose
};

// Runs p2psim; its exit code. stdout and stderr go to `log`.
int run(const options& o, const std::string& args, const std::string& log) {
  std::string cmd = "timeout -k 10 300 " + o.p2psim + " " + args + " >" + log + " 2>&1";
  int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

json read_json(const std::string& path) {
  std::ifstream f(path);
  if (!f) return json();
  return json::parse(f, nullptr, false);
}

// The JSON without what the machine decides (wall time, memory).
json without_host(json j) {
  j.erase("host");
  if (j.contains("runs"))
    for (auto& r : j["runs"]) r.erase("host");
  return j;
}

double relative(double a, double b) {
  return b != 0 ? std::fabs(a - b) / std::fabs(b) : std::fabs(a);
}

struct transfer_info {
  uint64_t size = 0;  // bytes per stream
  int streams = 1;    // at once (`concurrency`)
  int group = -1;     // transfers of one group run at the same time (`start: with_previous`)
};

std::map<std::string, transfer_info> transfers_of(const std::string& scenario) {
  std::map<std::string, transfer_info> out;
  YAML::Node s = YAML::LoadFile(scenario);
  auto size_of = [](const YAML::Node& n) {
    // The generator writes sizes as N B/KiB/MiB.
    std::string t = n.as<std::string>();
    size_t end = 0;
    uint64_t v = std::stoull(t, &end);
    std::string u = t.substr(end);
    return u == "KiB" ? v << 10 : u == "MiB" ? v << 20 : u == "GiB" ? v << 30 : v;
  };
  int group = -1;
  for (const auto& t : s["transfers"]) {
    auto& x = out[t["name"].as<std::string>()];
    x.size = size_of(t["size"]);
    if (t["concurrency"]) x.streams = t["concurrency"].as<int>();
    if (!(t["start"] && t["start"].as<std::string>() == "with_previous")) ++group;
    x.group = group;
  }
  if (auto m = s["matrix"]) {
    std::vector<std::string> d = m["devices"].as<std::vector<std::string>>();
    for (const auto& a : d)
      for (const auto& b : d)
        if (a != b) out[a + "->" + b].size = size_of(m["size"]);
  }
  return out;
}

// Every switch's payload in and out, from the links' counters.
void check_conservation(const json& run, const std::string& tag, const std::string& topology,
                        findings& f) {
  YAML::Node t = YAML::LoadFile(topology);
  std::map<std::string, std::string> up_of;  // link (by its down node) -> its up node
  for (const auto& l : t["links"]) up_of[l["down"].as<std::string>()] = l["up"].as<std::string>();
  const json& links = run["stats"]["links"];
  for (const auto& s : t["switches"]) {
    std::string sw = s["name"].as<std::string>();
    uint64_t in = links[sw]["downstream"]["payload_bytes"].get<uint64_t>();
    uint64_t out = links[sw]["upstream"]["payload_bytes"].get<uint64_t>();
    for (const auto& [down, up] : up_of)
      if (up == sw) {
        in += links[down]["upstream"]["payload_bytes"].get<uint64_t>();
        out += links[down]["downstream"]["payload_bytes"].get<uint64_t>();
      }
    if (in != out)
      f.add(fmt::format("{}: switch {} took in {} payload bytes and sent {}", tag, sw, in, out));
  }
}

// Whether a warning of `run` names a link or interconnect that the path crosses.
bool warned_about(const json& run, const p2psim::oracle::path_bound& path) {
  if (!run.contains("warnings")) return false;
  for (const auto& w : run["warnings"]) {
    const std::string text = w.get<std::string>();
    for (const auto& l : path.links)
      if (text.find("link " + l + ":") != std::string::npos) return true;
    for (const auto& q : path.interconnects)
      if (text.find("interconnect " + q + ":") != std::string::npos) return true;
  }
  return false;
}

// Runs one scenario (and the topology it names, beside it) at both fidelities and checks it.
// Its runs' JSON and logs go to `out`.
void check_files(const options& o, const std::string& scenario, const std::string& topology,
                 const std::string& tag, const std::string& repro, const std::string& out_dir,
                 findings& f) {
  const std::string stem = out_dir + "/" + fs::path(scenario).stem().string();
  std::map<std::string, json> runs;
  for (const std::string fid : {"tlp", "burst", "burst-again"}) {
    std::string fidelity = fid == "tlp" ? "tlp" : "burst";
    std::string out = stem + "." + fid + ".json";
    int rc = run(o, fmt::format("run {} --fidelity {} --json {}", scenario, fidelity, out),
                 stem + "." + fid + ".log");
    if (rc != 0) {
      std::ifstream log(stem + "." + fid + ".log");
      std::string first, line;
      while (std::getline(log, line))
        if (line.find("error") != std::string::npos || line.find("FAIL") != std::string::npos) {
          first = line;
          break;
        }
      f.add(fmt::format("{} [{}]: p2psim exited {}: {}  ({} --fidelity {})", tag, fid, rc, first,
                        repro, fidelity));
      return;
    }
    runs[fid] = read_json(out);
    if (runs[fid].is_discarded() || runs[fid].is_null()) {
      f.add(fmt::format("{} [{}]: no JSON", tag, fid));
      return;
    }
  }
  if (without_host(runs["burst"]) != without_host(runs["burst-again"]))
    f.add(
        fmt::format("{}: two burst runs of the same files gave different JSON  ({})", tag, repro));

  p2psim::oracle::machine_view machine(topology, o.platforms);
  auto sizes = transfers_of(scenario);
  for (const std::string fid : {"tlp", "burst"}) {
    const json& j = runs[fid];
    for (const auto& b : j["bandwidth"]) {
      std::string name = b["transfer"], src = b["src"], dst = b["dst"];
      bool write = b["op"] == "write";
      std::string what =
          fmt::format("{} [{}] {} {} {} {}", tag, fid, name, src, write ? "->" : "<-", dst);
      if (b["failed_bytes"] != 0 || b["mismatched_bytes"] != 0)
        f.add(fmt::format("{}: {} bytes failed, {} mismatched of {}  ({} --fidelity {})", what,
                          b["failed_bytes"].get<uint64_t>(), b["mismatched_bytes"].get<uint64_t>(),
                          b["bytes"].get<uint64_t>(), repro, fid));
      auto bound = machine.bound(src, dst, write, sizes[name].size, sizes[name].streams);
      double gbps = b["gbps"];
      if (gbps > bound.max_gbps * (1 + 1e-9))
        f.add(
            fmt::format("{}: {:.4f} GB/s for {} x {} B, above the limit of its path, {:.4f} "
                        "GB/s ({})  ({} --fidelity {})",
                        what, gbps, sizes[name].streams, sizes[name].size, bound.max_gbps,
                        bound.bottleneck, repro, fid));
    }
    for (const auto& l : j["latency"]) {
      std::string src = l["src"], dst = l["dst"];
      bool write = l["op"] == "write";
      auto bound = machine.bound(src, dst, write, l["bytes"].get<uint64_t>(), 1);
      double ns = l["ns"];
      if (ns < bound.min_latency_ns * (1 - 1e-9))
        f.add(fmt::format(
            "{} [{}] latency {} {} {}: {:.3f} ns, below the fixed delays of its path, "
            "{:.3f} ns  ({} --fidelity {})",
            tag, fid, src, write ? "->" : "<-", dst, ns, bound.min_latency_ns, repro, fid));
    }
    for (const auto& r : j["runs"]) check_conservation(r, tag + " [" + fid + "]", topology, f);
  }
  // Burst against TLP, transfer by transfer. A transfer shares links with the others of its
  // group, so a warning about any of their paths counts.
  const json& tlp = runs["tlp"];
  const json& burst = runs["burst"];
  const json& burst_run = burst["runs"][0];
  auto group_links = [&](const json& entry) {
    const auto& me = sizes[entry["transfer"].get<std::string>()];
    p2psim::oracle::path_bound paths;  // the links and interconnects of them all
    for (const auto& b : tlp["bandwidth"]) {
      const auto& other = sizes[b["transfer"].get<std::string>()];
      if (&other != &me && (me.group < 0 || other.group != me.group)) continue;
      auto bound = machine.bound(b["src"], b["dst"], b["op"] == "write", other.size, 1);
      paths.links.insert(paths.links.end(), bound.links.begin(), bound.links.end());
      paths.interconnects.insert(paths.interconnects.end(), bound.interconnects.begin(),
                                 bound.interconnects.end());
    }
    return paths;
  };
  f.any_warning = burst_run.contains("warnings") && !burst_run["warnings"].empty();
  for (size_t i = 0; i < tlp["bandwidth"].size() && i < burst["bandwidth"].size(); ++i) {
    const json& a = tlp["bandwidth"][i];
    const json& b = burst["bandwidth"][i];
    const bool warned = warned_about(burst_run, group_links(a));
    f.transfers.push_back(
        {tag + " " + a["transfer"].get<std::string>(), a["gbps"], b["gbps"], warned});
    double d = relative(b["gbps"], a["gbps"]);
    if (d <= 0.01 || warned) continue;
    bool write = a["op"] == "write";
    f.add(fmt::format(
        "{} burst/tlp {} {} {} {} ({} B): burst {:.4f} GB/s, tlp {:.4f} GB/s ({:+.2f}%), "
        "and no warning names a link of the path  ({})",
        tag, a["transfer"].get<std::string>(), a["src"].get<std::string>(), write ? "->" : "<-",
        a["dst"].get<std::string>(), sizes[a["transfer"]].size, b["gbps"].get<double>(),
        a["gbps"].get<double>(), (b["gbps"].get<double>() / a["gbps"].get<double>() - 1) * 100,
        repro));
  }
  for (size_t i = 0; i < tlp["latency"].size() && i < burst["latency"].size(); ++i) {
    const json& a = tlp["latency"][i];
    const json& b = burst["latency"][i];
    double d = relative(b["ns"], a["ns"]);
    if (d <= 0.01) continue;
    bool write = a["op"] == "write";
    auto bound = machine.bound(a["src"], a["dst"], write, a["bytes"], 1);
    if (warned_about(burst_run, bound)) continue;
    f.add(fmt::format(
        "{} burst/tlp latency {} {} {} ({} B): burst {:.3f} ns, tlp {:.3f} ns ({:+.2f}%), "
        "and no warning names a link of the path  ({})",
        tag, a["src"].get<std::string>(), write ? "->" : "<-", a["dst"].get<std::string>(),
        a["bytes"].get<uint64_t>(), b["ns"].get<double>(), a["ns"].get<double>(),
        (b["ns"].get<double>() / a["ns"].get<double>() - 1) * 100, repro));
  }
}

void check_case(const options& o, uint64_t seed,
                const std::vector<p2psim::generate::platform_facts>& platforms, findings& f) {
  generated_case c = p2psim::generate::generate_case(seed, platforms);
  generated_case again = p2psim::generate::generate_case(seed, platforms);
  if (c.topology_yaml != again.topology_yaml || c.scenario_yaml != again.scenario_yaml)
    f.add(c.name + ": the same seed generated different files");
  const std::string dir = o.dir + "/" + c.name;
  const std::string scenario = p2psim::generate::write_case(c, dir);
  if (o.verbose) f.summary = c.summary;
  check_files(
      o, scenario, dir + "/" + c.name + ".topology.yaml", c.name,
      fmt::format("p2psim generate --seed {} -o DIR && p2psim run DIR/{}.yaml", seed, c.name), dir,
      f);
}

// Cases first to first + count - 1 of the one-device sweep (those that exist).
int check_sweep(const options& o, const std::vector<p2psim::generate::platform_facts>& platforms) {
  const auto cases = p2psim::oracle::one_device_sweep(platforms);
  const uint64_t end = std::min<uint64_t>(cases.size(), o.first + o.count);
  size_t failed = 0, checked = 0;
  p2psim::oracle::burst_accuracy accuracy;
  for (uint64_t i = o.first; i < end; ++i, ++checked) {
    const auto& c = cases[i];
    const std::string dir = o.dir + "/" + c.name;
    fs::create_directories(dir);
    std::ofstream(dir + "/" + c.name + ".topology.yaml") << c.topology_yaml;
    std::ofstream(dir + "/" + c.name + ".yaml") << c.scenario_yaml;
    findings f;
    try {
      check_files(o, dir + "/" + c.name + ".yaml", dir + "/" + c.name + ".topology.yaml", c.name,
                  fmt::format("generated_check --sweep --first {} --count 1 --keep --p2psim {} "
                              "--platforms {} --dir {}; {}",
                              i, o.p2psim, o.platforms, o.dir, c.summary),
                  dir, f);
    } catch (const std::exception& e) {
      f.add(fmt::format("{}: {}", c.name, e.what()));
    }
    if (o.verbose) std::cout << c.summary << "\n";
    for (const auto& l : f.lines) std::cout << l << "\n";
    failed += !f.lines.empty();
    accuracy.add_case(f.transfers, f.any_warning);
    if (f.lines.empty() && !o.keep) fs::remove_all(dir);
  }
  if (o.summary) std::cout << accuracy.report();
  std::cout << fmt::format("{} of {} sweep cases held ({} to {} of {})\n", checked - failed,
                           checked, o.first, end ? end - 1 : 0, cases.size());
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  CLI::App app{"Differential and invariant testing of p2psim on generated machines"};
  app.add_option("--first", o.first, "The first seed");
  app.add_option("--count", o.count, "How many seeds")->check(CLI::PositiveNumber);
  app.add_option("--scenario", o.scenarios,
                 "Check these scenario files (each beside NAME.topology.yaml) instead of seeds")
      ->check(CLI::ExistingFile);
  app.add_option("--p2psim", o.p2psim, "The p2psim binary")->required();
  app.add_option("--platforms", o.platforms, "topologies/platforms")->required();
  app.add_option("--dir", o.dir, "Where the cases and their runs go")->required();
  app.add_flag("--keep", o.keep, "Keep the files of cases that hold too");
  app.add_option("--known", o.known,
                 "Seeds with open findings (tests/generated/known_findings.txt)");
  app.add_flag("-v,--verbose", o.verbose, "Print each case's summary");
  app.add_option("--jobs", o.jobs, "Cases checked at once")->check(CLI::Range(1u, 256u));
  app.add_flag("--summary", o.summary,
               "Print how far burst fidelity was from TLP fidelity, transfer by transfer");
  app.add_flag("--sweep", o.sweep,
               "Check the one-device sweep's cases --first (from 0) to --first + --count - 1");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  fs::create_directories(o.dir);
  if (!o.scenarios.empty()) {
    size_t failed = 0;
    p2psim::oracle::burst_accuracy accuracy;
    for (const auto& path : o.scenarios) {
      findings f;
      const std::string stem = fs::path(path).stem().string();
      const std::string topology =
          (fs::path(path).parent_path() / (stem + ".topology.yaml")).string();
      try {
        check_files(o, path, topology, stem, "p2psim run " + path, o.dir, f);
      } catch (const std::exception& e) {
        f.add(fmt::format("{}: {}", stem, e.what()));
      }
      for (const auto& l : f.lines) std::cout << l << "\n";
      failed += !f.lines.empty();
      accuracy.add_case(f.transfers, f.any_warning);
    }
    if (o.summary) std::cout << accuracy.report();
    std::cout << fmt::format("{} of {} scenarios held\n", o.scenarios.size() - failed,
                             o.scenarios.size());
    return failed ? 1 : 0;
  }
  const auto platforms = p2psim::generate::platforms_in({o.platforms});
  if (o.sweep) return check_sweep(o, platforms);
  const auto known = read_known(o.known);
  // Cases run on `jobs` threads (each case runs p2psim as child processes); their findings
  // print in seed order once all are done.
  std::vector<findings> results(o.count);
  std::atomic<uint64_t> next{0};
  auto work = [&] {
    for (uint64_t i; (i = next++) < o.count;) {
      const uint64_t seed = o.first + i;
      findings& f = results[i];
      try {
        check_case(o, seed, platforms, f);
      } catch (const std::exception& e) {
        f.add(fmt::format("gen-{}: {}", seed, e.what()));
      }
      if (f.lines.empty() && !o.keep && !known.count(seed))
        fs::remove_all(o.dir + "/gen-" + std::to_string(seed));
    }
  };
  std::vector<std::thread> threads;
  for (unsigned j = 0; j < o.jobs; ++j) threads.emplace_back(work);
  for (auto& t : threads) t.join();

  size_t failed = 0, known_open = 0;
  p2psim::oracle::burst_accuracy accuracy;
  for (uint64_t i = 0; i < o.count; ++i) {
    const uint64_t seed = o.first + i;
    const findings& f = results[i];
    if (!f.summary.empty()) std::cout << f.summary << "\n";
    accuracy.add_case(f.transfers, f.any_warning);
    if (auto k = known.find(seed); k != known.end()) {
      if (f.lines.empty()) {
        std::cout << fmt::format("gen-{} holds now: take it off the known findings ({})\n", seed,
                                 k->second);
        ++failed;
      } else {
        for (const auto& l : f.lines) std::cout << "known: " << l << "\n";
        ++known_open;
      }
      continue;
    }
    for (const auto& l : f.lines) std::cout << l << "\n";
    failed += !f.lines.empty();
  }
  if (o.summary) std::cout << accuracy.report();
  std::cout << fmt::format(
      "{} of {} generated cases held (seeds {} to {}){}\n", o.count - failed - known_open, o.count,
      o.first, o.first + o.count - 1,
      known_open ? fmt::format(", {} with a known open finding", known_open) : "");
  return failed ? 1 : 0;
}
