// What an AtomicOp (PCIe Base Spec 6.15) does at its completer, as pure arithmetic: the
// memory completers call it between reading the old value and writing the new one.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "models/pcie/tlp.h"

namespace p2psim::pcie {

// The value AtomicOp `op` leaves at its target, from the old value and the request's operand
// bytes (little endian; CAS: the compare value, then the swap value). The old value is 4 or 8
// bytes; FetchAdd wraps around at that size.
std::vector<uint8_t> atomic_result(tlp_type op, std::span<const uint8_t> old,
                                   std::span<const uint8_t> operand);

}  // namespace p2psim::pcie
