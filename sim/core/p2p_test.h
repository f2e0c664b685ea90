// p2pBandwidthLatencyTest (NVIDIA cuda-samples) on a simulated machine: a CUDA program that
// copies between every pair of GPUs with peer access disabled and then enabled, one way and
// both ways at once, and 4-byte copies for latency; and its report, in the sample's layout.
// Plain C++: the program is a scenario the runner runs like any other
// (tools/p2psim/p2p_command.cpp), the figures come from its named copies.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/result.h"
#include "sim/topology/address_map.h"
#include "sim/topology/topology.h"

namespace p2psim::core::p2p_test {

struct device {
  std::string name;   // the topology's
  std::string model;  // its device preset, or ""
  uint16_t bdf = 0;
};

struct options {
  uint64_t bytes = 40'000'000;  // per copy: the sample's 10,000,000 ints
  std::string fidelity = "tlp";
};

// The GPUs of a topology in CUDA ordinal order (the topology's device order), and which may
// reach which (cuDeviceCanAccessPeer: where the fabric routes P2P writes and reads).
std::vector<device> gpus(const topo::topology& t, const topo::address_map& a);
std::vector<std::vector<bool>> access(const topo::topology& t, const topo::address_map& a,
                                      const std::vector<device>& gpus);

// The scenario file's text: the program, on `topology_file` (an absolute path).
std::string scenario_yaml(const std::string& topology_file, const std::vector<device>& gpus,
                          const std::vector<std::vector<bool>>& access, const options& o);

// What the sample prints: bandwidth in GB/s (1e9 B/s) and latency in us, by [from][to].
struct figures {
  std::vector<device> devices;
  std::vector<std::vector<bool>> access;
  uint64_t bytes = 0;
  using matrix = std::vector<std::vector<double>>;
  matrix uni_disabled, uni_enabled, bi_disabled, bi_enabled, latency_disabled, latency_enabled;
  // The sample's CPU latency: the host's time in each 4-byte asynchronous copy's call (the GPU
  // preset's `copy_submit`), where the GPU latency is the copy's own time on its stream.
  matrix cpu_latency_disabled, cpu_latency_enabled;
};
figures from_run(const run_result& r, const std::vector<device>& gpus,
                 const std::vector<std::vector<bool>>& access, uint64_t bytes);

void print(std::ostream& out, const figures& f, const std::string& topology_file);
nlohmann::json to_json(const figures& f);

}  // namespace p2psim::core::p2p_test
