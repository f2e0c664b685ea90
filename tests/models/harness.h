// Runs a scenario on one topology inside the test process, as `p2psim run` does. SystemC
// elaborates once per process: each TEST_CASE calls run_scenario at most once, and ctest
// runs every case in a process of its own.
#pragma once

#include <string>
#include <vector>

#include "sim/core/result.h"
#include "sim/core/runner.h"
#include "sim/core/scenario.h"
#include "sim/topology/address_map.h"
#include "sim/topology/topology_loader.h"

namespace p2psim::test {

inline std::string data(const std::string& rel) {
  return P2PSIM_SOURCE_DIR "/" + rel;
}

inline core::run_result run_scenario(const std::string& scenario_path,
                                     const std::vector<std::string>& sets = {},
                                     const pcie::order_policy& order = {}) {
  std::vector<config::override_spec> topo_sets, scen_sets;
  for (const auto& s : sets) {
    auto spec = config::parse_override(s);
    (topo::is_topology_override(spec) ? topo_sets : scen_sets).push_back(spec);
  }
  core::scenario sc = core::load_scenario(data(scenario_path), scen_sets);
  topo::load_options opt;
  opt.platform_dirs = {data("topologies/platforms")};
  opt.overrides = topo_sets;
  topo::topology t = topo::load_topology(sc.topologies.at(0), opt);
  topo::address_map m = topo::enumerate(t);
  return core::run_topology(sc, t, m, order);
}

inline const core::bandwidth_result& transfer(const core::run_result& r, const std::string& name) {
  for (const auto& b : r.bandwidth)
    if (b.transfer == name) return b;
  throw std::runtime_error("no transfer " + name);
}

// A program's DMA result by the name its dma step gave.
inline const nlohmann::json& program_dma(const core::run_result& r, const std::string& name) {
  for (const auto& d : r.program["dma"])
    if (d["name"] == name) return d;
  throw std::runtime_error("no dma " + name);
}

}  // namespace p2psim::test
