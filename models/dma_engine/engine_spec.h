// What a topology file sets for a third-party DMA engine (docs/formats-topology.md,
// "devices[]", `type: dma_engine`): a NIC/FPGA-like descriptor DMA device.
#pragma once

#include <cstdint>
#include <optional>

#include "models/params/param.h"

namespace p2psim::dma_engine {

struct engine_spec {
  uint64_t bar2_bytes = 0;               // on-board memory exposed to peers; 0: none
  std::optional<uint64_t> bar2_address;  // unset: allocated by enumeration
  uint64_t local_memory_bytes = 1ull << 30;
  double descriptor_latency_ns = 50;
  // Moving read data into local memory (models/dma/command_pipes.h).
  uint64_t command_bytes = 0;
  double command_rate_gbs = 0;
};

inline const params::table<engine_spec>& engine_spec_params() {
  static const params::table<engine_spec> t{
      params::size("bar2", &engine_spec::bar2_bytes,
                   "On-board memory exposed to peers. 0 (none), or a power of two of at least "
                   "4KiB."),
      params::address("bar2_address", &engine_spec::bar2_address,
                      "Explicit BAR2 base; aligned to `bar2`.")
          .default_text("allocated"),
      params::size("local_memory", &engine_spec::local_memory_bytes,
                   "Buffer the engine reads into / writes from."),
      params::time("descriptor_latency", &engine_spec::descriptor_latency_ns,
                   "Descriptor processing time."),
      params::size("command_size", &engine_spec::command_bytes,
                   "The engine moves a job's read data into local memory as commands of at "
                   "most this many bytes (aligned in local memory), side by side; 0: a "
                   "transfer is one command.")
          .power_of_two(64)
          .or_zero(),
      params::bandwidth("command_rate", &engine_spec::command_rate_gbs,
                        "The rate at which one command's read data moves into local memory, "
                        "after each TLP of it has arrived; 0: data lands as it arrives.")
          .at_least(0)
          .default_text("0 (as it arrives)"),
  };
  return t;
}

}  // namespace p2psim::dma_engine
