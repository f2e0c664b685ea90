// What an NVMe SSD counts (results: `stats`, docs/formats-scenario.md, "Stats"). Plain C++:
// the queue logic counts most of it, the SystemC controller the BAR0 and refused accesses.
#pragma once

#include <cstdint>

#include "models/stats/stat.h"

namespace p2psim::nvme {

struct nvme_stats {
  uint64_t read_commands = 0, write_commands = 0;  // NVMe Read / Write commands submitted
  uint64_t bytes_read = 0, bytes_written = 0;      // flash side
  uint64_t completions = 0;
  uint64_t queue_full_stalls = 0;  // commands that found their submission queue full
  uint64_t max_outstanding = 0;
  uint64_t max_command_latency_ps = 0;  // doorbell to completion entry
  uint64_t bar0_accesses = 0, unsupported_requests = 0;
};

inline const stats::table<nvme_stats>& nvme_stat_table() {
  using stats::unit;
  static const stats::table<nvme_stats> t{
      stats::counter("read_commands", &nvme_stats::read_commands, unit::count,
                     "NVMe Read commands submitted (flash to bus)."),
      stats::counter("write_commands", &nvme_stats::write_commands, unit::count,
                     "NVMe Write commands submitted (bus to flash)."),
      stats::counter("bytes_read", &nvme_stats::bytes_read, unit::bytes, "Bytes read from flash."),
      stats::counter("bytes_written", &nvme_stats::bytes_written, unit::bytes,
                     "Bytes programmed into flash (those that arrived)."),
      stats::counter("completions", &nvme_stats::completions, unit::count,
                     "Completion queue entries posted."),
      stats::counter("queue_full_stalls", &nvme_stats::queue_full_stalls, unit::count,
                     "Commands that found their submission queue full and waited on the host."),
      stats::counter("max_outstanding", &nvme_stats::max_outstanding, unit::count,
                     "Most commands in flight at once, all queues together."),
      stats::counter("max_command_latency_ps", &nvme_stats::max_command_latency_ps,
                     unit::picoseconds, "Longest doorbell-to-completion time of a command."),
      stats::counter("bar0_accesses", &nvme_stats::bar0_accesses, unit::tlps, "Register accesses."),
      stats::counter("unsupported_requests", &nvme_stats::unsupported_requests, unit::tlps,
                     "Requests that hit no BAR: Unsupported Request."),
  };
  return t;
}

}  // namespace p2psim::nvme
