// An NVMe I/O command as the model keeps it, and how a DMA job becomes commands. Plain C++
// (no SystemC): the controller's SystemC shell converts dma::dma_job into a job_request.
#pragma once

#include <cstdint>
#include <vector>

#include "models/pcie/tlp.h"

namespace p2psim::nvme {

// NVM Command Set I/O opcodes.
enum class opcode : uint8_t { write = 0x01, read = 0x02 };

// Completion queue entry status (NVMe Base Spec, Generic Command Status).
enum class status : uint16_t { success = 0x00, data_transfer_error = 0x04 };

// A piece of a command's data: `length` bytes of flash from `flash_offset` on, at
// `bus_address` (GPU BAR1, host memory, an IOVA).
struct bus_segment {
  uint64_t bus_address = 0;
  uint64_t length = 0;
  uint64_t flash_offset = 0;
};

// What the drive needs of a dma::dma_job: its direction, its segments (local offsets are
// flash offsets), the caller's stream and whether it runs in program order.
struct job_request {
  bool to_bus = true;  // dma_job::write: flash -> bus, NVMe Read; false: NVMe Write
  std::vector<bus_segment> segments;
  pcie::tlp_attrs attrs;
  uint32_t stream = 0;
  bool in_order = false;
};

struct command {
  uint64_t id = 0;  // controller-wide (a real CID is 16 bits per queue; the model needs no reuse)
  opcode op = opcode::read;
  uint64_t flash_offset = 0, length = 0;  // one contiguous range of flash, like SLBA + NLB
  std::vector<bus_segment> segments;      // the bus side, in flash order (SGL-like)
  pcie::tlp_attrs attrs;
  uint32_t stream = 0;       // the caller's
  uint64_t job = 0;          // the job it was cut from
  uint16_t sq = 0;           // I/O queue id, 1-based (queue 0 is the admin queue)
  bool in_flight = false;    // in its submission queue, doorbell rung, not completed
  uint64_t queued_ps = 0;    // handed to its queue by the host
  uint64_t doorbell_ps = 0;  // in its submission queue, doorbell rung
  uint64_t start_ps = 0;     // fetched and parsed: the controller works on it
  uint64_t data_ps = 0;      // Read: data out of the flash; Write: data persisted
};

struct completion_entry {
  uint64_t command_id = 0;
  uint16_t sq = 0;
  nvme::status status = status::success;
  uint64_t submit_ps = 0;  // doorbell
  uint64_t complete_ps = 0;
};

// Cuts `job` into commands of at most `max_transfer` bytes (a power of two) that never cross
// a multiple of it in flash, as a driver splits I/O at the drive's MDTS. A command covers
// consecutive segments while their flash ranges are contiguous; a gap in flash starts a new
// one. Zero-length segments are skipped. Ids, queues and times are left to the queues.
std::vector<command> cut_into_commands(const job_request& job, uint64_t max_transfer);

}  // namespace p2psim::nvme
