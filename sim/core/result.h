// What a run measured, independent of how it is printed: the JSON document users and CI
// read (docs/design.md, "What users see"), and what the text report is printed from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace p2psim::core {

struct bandwidth_result {
  std::string transfer;
  std::string src, dst;           // initiator, target
  std::string op;                 // "write" | "read", seen from the initiator
  uint64_t bytes = 0;             // moved and verified
  double gbps = 0;                // GB/s, GB = 1e9 bytes
  double seconds = 0;             // simulated time the bytes took
  uint64_t failed_bytes = 0;      // refused by the fabric (UR / CA / unmapped)
  uint64_t mismatched_bytes = 0;  // arrived but differ from the source
  std::string path;        // nvidia-smi class of the path (PIX ... SYS), "" if not device-device
  int topology_class = 0;  // GPUDirect RDMA 13.3, 5.4: 1, 2 or 3
  // A program's named cuMemcpy step (cuMemcpyHtoD, ...): src is the GPU whose copy engine
  // ran it, and the time is what its caller waited (synchronous) or its completion (async).
  // "" for a DMA transfer.
  std::string call;
  bool async = false;
};

struct latency_result {
  std::string src, dst, op;
  uint64_t bytes = 0;
  int samples = 0;
  double ns = 0;  // mean, first TLP out to last byte stored
};

struct run_result {
  std::string scenario;
  std::string topology;  // name
  std::string topology_file;
  std::string description;
  std::vector<bandwidth_result> bandwidth;
  std::vector<latency_result> latency;
  uint64_t simulated_ns = 0;
  double wall_seconds = 0;
  uint64_t tlps = 0;  // TLPs simulated (in burst fidelity: the TLPs the bursts stand for)
  uint64_t hops = 0;  // TLP-hops: link traversals of those TLPs, every link summed
  // The most TLPs (at burst fidelity, bursts) alive at once: sent and not yet freed.
  uint64_t peak_in_flight = 0;
  std::string fidelity = "tlp";
  double data_wall_seconds = 0;  // of wall_seconds: filling source patterns, verifying bytes
  uint64_t peak_rss_kib = 0;  // the process's peak resident memory (machine-dependent, like wall)
  nlohmann::json stats = nlohmann::json::object();
  nlohmann::json program;           // steps, driver and cache counters, BAR1 use (null: no program)
  std::vector<std::string> errors;  // failed checks (data mismatch, refused bytes)
  // Where the run approximates: burst fidelity's classes (sim/core/burst_warnings.h).
  std::vector<std::string> warnings;
};

nlohmann::json to_json(const run_result& r);
run_result run_result_from_json(const nlohmann::json& j);

}  // namespace p2psim::core
