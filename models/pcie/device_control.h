// A PCIe function's Device Control settings that shape its traffic (PCIe Base Spec 7.5.3.4),
// and how many non-posted requests it keeps outstanding. A topology's `pcie` section sets them
// for every device; a device may set its own (docs/formats-topology.md, "pcie").
#pragma once

#include <cstdint>

#include "models/params/param.h"

namespace p2psim::pcie {

struct device_control {
  uint32_t mps = 256;   // Max Payload Size
  uint32_t mrrs = 512;  // Max Read Request Size
  uint32_t rcb = 64;    // Read Completion Boundary
  uint32_t tags = 256;  // outstanding non-posted requests (32 / 256 / 768)
};

inline const params::table<device_control>& device_control_params() {
  static const params::table<device_control> t{
      params::size("mps", &device_control::mps, "Max Payload Size.").power_of_two(128, 4096),
      params::size("mrrs", &device_control::mrrs, "Max Read Request Size.").power_of_two(128, 4096),
      params::size("rcb", &device_control::rcb, "Read Completion Boundary.").power_of_two(64, 128),
      params::integer("tags", &device_control::tags,
                      "Outstanding non-posted requests per requester (32: 5-bit, 256: 8-bit, "
                      "768/1024: 10-bit tags).")
          .between(1, 1024),
  };
  return t;
}

}  // namespace p2psim::pcie
