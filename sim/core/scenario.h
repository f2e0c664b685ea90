// What runs on a topology: a scenario file names one or more topologies and the transfers
// to measure on each (who initiates, read or write, size, count, concurrency), and what to
// measure. See docs/formats-scenario.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/pcie/tlp.h"
#include "sim/config/overrides.h"
#include "sim/config/source_loc.h"
#include "sim/core/program.h"

namespace p2psim::core {

struct transfer_spec {
  std::string name;
  std::string initiator;       // a GPU (its copy engine) or a DMA engine
  std::string target;          // a GPU (its BAR1), a DMA engine (its BAR2), a socket (memory)
  bool write = true;           // seen from the initiator
  uint64_t size = 0;           // bytes per stream and repetition
  int count = 1;               // repetitions, back to back
  int concurrency = 1;         // streams at once, each moving `size`
  bool with_previous = false;  // starts together with the transfer before it (`start:`)
  pcie::tlp_attrs attrs;
  bool map_bar1 = true;      // GPU target: map BAR1 pages onto VRAM first (false: the DMA
                             // hits unmapped BAR1 pages, which the GPU refuses)
  bool iommu_map = true;     // initiator behind a translating IOMMU: map the target for it and
                             // DMA to the IOVA (false: the physical address, which it blocks)
  bool from_matrix = false;  // made by the scenario's `matrix`, not listed in `transfers`
  config::source_loc loc;
};

// p2pBandwidthLatencyTest's unidirectional matrix: one transfer per ordered pair of
// `devices`, each alone, named by matrix_transfer_name. A list rather than "every device of
// the topology": the scenario is read before its topologies, and the list is also the order
// of the report's rows and columns.
struct transfer_matrix {
  std::vector<std::string> devices;
  bool write = true;
  uint64_t size = 0;  // bytes per pair and repetition
  int count = 1;      // repetitions per pair, back to back
  config::source_loc loc;
};

std::string matrix_transfer_name(const std::string& src, const std::string& dst);  // "gpu0->gpu1"
// The matrix's transfers, row by row (src), each row's columns (dst) in the list's order.
std::vector<transfer_spec> expand_matrix(const transfer_matrix& m);

// How finely the fabric is simulated. tlp: every TLP is a transaction of its own (the
// reference; litmus tests always use it). burst: a DMA moves in bursts of many TLPs, each
// charged the same per-TLP framing, header, DLLP, credit and tag costs analytically (for
// sweeps and BAR1 studies: same bytes, same ordering between bursts, far fewer events).
enum class fidelity { tlp, burst };
const char* to_string(fidelity f);

struct scenario {
  std::string name;
  std::string description;
  std::string file;
  std::vector<std::string> topologies;  // paths, resolved against the scenario's folder
  std::vector<config::source_loc> topology_locs;
  std::vector<transfer_spec> transfers;  // those listed, then the matrix's
  std::optional<transfer_matrix> matrix;
  bool measure_bandwidth = true;
  bool measure_latency = true;
  uint64_t latency_size = 4;  // bytes moved by a latency probe
  int latency_samples = 8;
  bool verify = true;  // compare every byte after each transfer
  uint64_t seed = 1;   // data patterns
  core::fidelity fidelity = core::fidelity::tlp;
  // Wall seconds simulated time may stand still (the kernel looping in zero time) before the
  // watchdog ends the run; 0: never.
  double watchdog_seconds = 60;
  program_spec program;  // processes calling CUDA and the third-party driver (optional)
};

// Loads and checks a scenario file; `overrides` are the --set items that are not topology
// paths (scenario paths such as `transfers.write.size=1MiB`).
scenario load_scenario(const std::string& path,
                       const std::vector<config::override_spec>& overrides);

}  // namespace p2psim::core
