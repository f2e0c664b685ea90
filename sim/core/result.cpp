#include "sim/core/result.h"

namespace p2psim::core {

using nlohmann::json;

json to_json(const run_result& r) {
  json j;
  j["scenario"] = r.scenario;
  j["topology"] = r.topology;
  j["topology_file"] = r.topology_file;
  j["description"] = r.description;
  j["bandwidth"] = json::array();
  for (const auto& b : r.bandwidth) {
    j["bandwidth"].push_back({{"transfer", b.transfer},
                              {"src", b.src},
                              {"dst", b.dst},
                              {"op", b.op},
                              {"bytes", b.bytes},
                              {"gbps", b.gbps},
                              {"seconds", b.seconds},
                              {"failed_bytes", b.failed_bytes},
                              {"mismatched_bytes", b.mismatched_bytes},
                              {"path", b.path},
                              {"class", b.topology_class},
                              {"topology", r.topology}});
    if (!b.call.empty()) {
      j["bandwidth"].back()["call"] = b.call;
      j["bandwidth"].back()["async"] = b.async;
    }
  }
  j["latency"] = json::array();
  for (const auto& l : r.latency)
    j["latency"].push_back({{"src", l.src},
                            {"dst", l.dst},
                            {"op", l.op},
                            {"bytes", l.bytes},
                            {"samples", l.samples},
                            {"ns", l.ns},
                            {"topology", r.topology}});
  j["sim"] = {{"simulated_ns", r.simulated_ns},
              {"tlps", r.tlps},
              {"hops", r.hops},
              {"peak_in_flight", r.peak_in_flight},
              {"fidelity", r.fidelity}};
  // What the machine it ran on decides, the only fields that differ between two runs of the
  // same scenario and seed.
  j["host"] = {{"wall_seconds", r.wall_seconds},
               {"data_wall_seconds", r.data_wall_seconds},
               {"peak_rss_kib", r.peak_rss_kib}};
  j["stats"] = r.stats;
  if (!r.program.is_null()) j["program"] = r.program;
  j["errors"] = r.errors;
  j["warnings"] = r.warnings;
  return j;
}

run_result run_result_from_json(const json& j) {
  run_result r;
  r.scenario = j.value("scenario", "");
  r.topology = j.value("topology", "");
  r.topology_file = j.value("topology_file", "");
  r.description = j.value("description", "");
  for (const auto& b : j.at("bandwidth")) {
    bandwidth_result x;
    x.transfer = b.value("transfer", "");
    x.src = b.at("src");
    x.dst = b.at("dst");
    x.op = b.at("op");
    x.bytes = b.at("bytes");
    x.gbps = b.at("gbps");
    x.seconds = b.value("seconds", 0.0);
    x.failed_bytes = b.value("failed_bytes", 0ull);
    x.mismatched_bytes = b.value("mismatched_bytes", 0ull);
    x.path = b.value("path", "");
    x.call = b.value("call", "");
    x.async = b.value("async", false);
    x.topology_class = b.value("class", 0);
    r.bandwidth.push_back(x);
  }
  for (const auto& l : j.at("latency")) {
    latency_result x;
    x.src = l.at("src");
    x.dst = l.at("dst");
    x.op = l.at("op");
    x.bytes = l.value("bytes", 0ull);
    x.samples = l.value("samples", 0);
    x.ns = l.at("ns");
    r.latency.push_back(x);
  }
  const auto& s = j.at("sim");
  r.simulated_ns = s.at("simulated_ns");
  r.tlps = s.at("tlps");
  r.hops = s.value("hops", uint64_t(0));
  r.peak_in_flight = s.value("peak_in_flight", uint64_t(0));
  r.fidelity = s.value("fidelity", "tlp");
  const auto& h = j.at("host");
  r.wall_seconds = h.at("wall_seconds");
  r.peak_rss_kib = h.value("peak_rss_kib", uint64_t(0));
  r.data_wall_seconds = h.value("data_wall_seconds", 0.0);
  r.stats = j.value("stats", json::object());
  if (j.contains("program")) r.program = j["program"];
  r.errors = j.value("errors", std::vector<std::string>{});
  r.warnings = j.value("warnings", std::vector<std::string>{});
  return r;
}

}  // namespace p2psim::core
