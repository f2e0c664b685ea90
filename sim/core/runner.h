// Runs a scenario on one topology inside this process: checks the scenario against the
// topology, elaborates the fabric, drives the transfers from an SC_THREAD, verifies every
// byte, and returns what was measured. SystemC elaborates once per process, so a process
// runs one topology; `p2psim run` starts one process per topology for multi-topology
// scenarios.
#pragma once

#include <string>

#include "models/pcie/order_policy.h"
#include "sim/core/result.h"
#include "sim/core/scenario.h"
#include "sim/topology/address_map.h"
#include "sim/topology/topology.h"

namespace p2psim::core {

// Throws config::error (exit code 2) when the scenario cannot run on the topology: unknown
// devices, a transfer larger than the target can expose or the initiator can hold.
void check_scenario(const scenario& s, const topo::topology& t, const topo::address_map& a);

// Why the fabric refuses a transfer ("" if its path is routed): a platform that does not
// forward peer-to-peer reads or writes answers them with Unsupported Request, as real
// hardware does, and a translating IOMMU blocks a DMA to an address not mapped for the
// initiator (iommu_map: false); the run reports the refused bytes and exits 1.
std::string refusal_reason(const topo::topology& t, const topo::address_map& a,
                           const transfer_spec& x);

// Whether GPU `from` may reach GPU `to`'s memory (cuDeviceCanAccessPeer): the fabric routes
// its P2P writes and reads to it (a switch between them, or root complexes and interconnects
// that route peer-to-peer). An IOMMU, and the ACS redirect it turns on, do not enter into it:
// the NVIDIA driver does not look at them either (docs/p2p-bandwidth-latency.md).
bool peer_reachable(const topo::topology& t, const topo::address_map& a, const std::string& from,
                    const std::string& to);

// `order`: the fabric's ordering table and choice source (all rules, in order, by default).
run_result run_topology(const scenario& s, const topo::topology& t, const topo::address_map& a,
                        const pcie::order_policy& order = {});

}  // namespace p2psim::core
