#include "models/nvme/nvme_command.h"

#include <algorithm>
#include <stdexcept>

namespace p2psim::nvme {

std::vector<command> cut_into_commands(const job_request& job, uint64_t max_transfer) {
  if (max_transfer == 0 || (max_transfer & (max_transfer - 1)))
    throw std::invalid_argument("NVMe max_transfer must be a power of two");
  std::vector<command> out;
  auto open_new = [&](uint64_t flash) {
    command c;
    c.op = job.to_bus ? opcode::read : opcode::write;
    c.flash_offset = flash;
    c.attrs = job.attrs;
    c.stream = job.stream;
    out.push_back(std::move(c));
  };
  for (const bus_segment& s : job.segments) {
    for (uint64_t done = 0; done < s.length;) {
      const uint64_t flash = s.flash_offset + done;
      const bool contiguous = !out.empty() && out.back().flash_offset + out.back().length == flash;
      // A command ends at a multiple of max_transfer, so a contiguous one that reached it is
      // already closed: its end is aligned.
      if (!contiguous || flash % max_transfer == 0) open_new(flash);
      const uint64_t boundary = (flash / max_transfer + 1) * max_transfer;
      const uint64_t n = std::min(s.length - done, boundary - flash);
      command& c = out.back();
      c.segments.push_back({s.bus_address + done, n, flash});
      c.length += n;
      done += n;
    }
  }
  return out;
}

}  // namespace p2psim::nvme
