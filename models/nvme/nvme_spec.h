// What a topology file sets for an NVMe SSD: the storage adapter of GPUDirect Storage, a
// third-party peer that moves data between its flash and GPU BAR1 or host memory.
// Defaults describe a typical Gen3 x4 TLC drive (Samsung 970 EVO Plus data sheet: 3,500 MB/s
// sequential read, 3,300 MB/s sequential write) with the Linux nvme driver's queue settings;
// set your drive's figures.
#pragma once

#include <cstdint>

#include "models/params/param.h"

namespace p2psim::nvme {

struct nvme_spec {
  uint32_t queue_pairs = 8;
  uint32_t queue_depth = 1024;                 // Linux nvme driver: io_queue_depth
  uint64_t max_transfer_bytes = 128ull << 10;  // MDTS
  double command_latency_ns = 1'000;
  double read_latency_ns = 80'000;
  double write_latency_ns = 20'000;
  double read_bandwidth_gbs = 3.5;
  double write_bandwidth_gbs = 3.3;
  uint64_t capacity_bytes = 64ull << 30;  // sparse: only what a scenario touches costs memory
};

inline const params::table<nvme_spec>& nvme_spec_params() {
  static const params::table<nvme_spec> t{
      params::integer("queue_pairs", &nvme_spec::queue_pairs,
                      "I/O submission/completion queue pairs; commands go to them round robin.")
          .between(1, 65535),
      params::integer("queue_depth", &nvme_spec::queue_depth,
                      "Entries per submission queue (Linux nvme driver's io_queue_depth); at "
                      "most queue_depth - 1 commands are outstanding per queue (NVMe Base Spec: "
                      "a queue is full when Tail + 1 == Head).")
          .between(2, 65536),
      params::size("max_transfer", &nvme_spec::max_transfer_bytes,
                   "MDTS: the most one command moves. A job is cut into commands of at most "
                   "this, aligned to it in flash.")
          .power_of_two(4096, 2 << 20),
      params::time("command_latency", &nvme_spec::command_latency_ns,
                   "Doorbell to command start: submission queue entry fetch and parse."),
      params::time("read_latency", &nvme_spec::read_latency_ns,
                   "Flash read (tR and ECC) before a Read command's data can leave, per command; "
                   "typical Gen3 x4 TLC drive."),
      params::time("write_latency", &nvme_spec::write_latency_ns,
                   "Programming into the drive's write buffer after a Write command's data "
                   "arrived, per command; typical Gen3 x4 TLC drive."),
      params::bandwidth("read_bandwidth", &nvme_spec::read_bandwidth_gbs,
                        "Media read rate, shared by all commands; typical Gen3 x4 TLC drive "
                        "(sequential).")
          .above_zero(),
      params::bandwidth("write_bandwidth", &nvme_spec::write_bandwidth_gbs,
                        "Media write rate, shared by all commands; typical Gen3 x4 TLC drive "
                        "(sequential).")
          .above_zero(),
      params::size("capacity", &nvme_spec::capacity_bytes,
                   "The flash: the drive's local memory that jobs read from and write into.")
          .at_least(4096),
  };
  return t;
}

}  // namespace p2psim::nvme
