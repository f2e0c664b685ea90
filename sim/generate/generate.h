// Random valid machines and workloads: a topology and a scenario per seed, for differential
// and invariant testing (tests/generated) and for users who want to try p2psim on machines
// nobody hand-picked (`p2psim generate`). Everything generated loads and runs; what must not
// load is the fuzzers' job (tests/fuzz).
//
// The same seed gives byte-identical files on every machine: the generator draws from its own
// SplitMix64 stream, not from the standard library's distributions, whose results are
// implementation-defined.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace p2psim::generate {

// What the generator needs to know of a platform preset to build machines it routes.
struct platform_facts {
  std::string name;  // empty: no preset (the built-in defaults)
  int max_gen = 5;
  bool root_complex_routes_write = true, root_complex_routes_read = true;
  bool interconnect_routes_write = true, interconnect_routes_read = true;
};

// The presets found in these directories (topologies/platforms), plus the built-in defaults.
std::vector<platform_facts> platforms_in(const std::vector<std::string>& dirs);

struct generated_case {
  uint64_t seed = 0;
  std::string name;           // "gen-<seed>"
  std::string topology_yaml;  // a topology file
  // A scenario file whose `topology:` is "<name>.topology.yaml" beside it.
  std::string scenario_yaml;
  std::string summary;  // one line: sockets, switches, devices, transfers
};

generated_case generate_case(uint64_t seed, const std::vector<platform_facts>& platforms);

// Writes DIR/<name>.topology.yaml and DIR/<name>.yaml; returns the scenario's path.
std::string write_case(const generated_case& c, const std::string& dir);

}  // namespace p2psim::generate
