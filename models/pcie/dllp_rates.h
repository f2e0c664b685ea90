// How often a PCIe receiver acknowledges what it receives and returns its credits: the bytes of
// TLPs between the ACK DLLPs it sends, and between its UpdateFC DLLPs. The spec gives the most
// a receiver may wait (its Ack latency and UpdateFC tables, by gen, width and MPS); real
// receivers coalesce more, which a platform preset (its root ports) or a device preset
// calibrates against measured bandwidth (docs/architecture.md, "Timing model and why").
#pragma once

#include <cstdint>

#include "models/params/param.h"

namespace p2psim::pcie {

struct dllp_rates {
  uint32_t ack_limit = 0;  // bytes between ACK DLLPs; 0: the spec's table value
  uint32_t fc_limit = 0;   // bytes between UpdateFC DLLPs; 0: the spec's table value
};

// The keys a receiver's settings give them under (`ack_limit`, `fc_limit`).
inline const params::table<dllp_rates>& dllp_rate_params() {
  static const params::table<dllp_rates> t{
      params::integer("ack_limit", &dllp_rates::ack_limit,
                      "Bytes of TLPs it receives between the ACK DLLPs it sends; 0 = the spec's "
                      "table value for the link's gen, width and MPS.")
          .between(0, 1 << 20),
      params::integer("fc_limit", &dllp_rates::fc_limit,
                      "Bytes of TLPs it receives between the UpdateFC DLLPs it sends; 0 = the "
                      "spec's table value.")
          .between(0, 1 << 20),
  };
  return t;
}

}  // namespace p2psim::pcie
