// The PCIe transaction ordering table (PCIe Base Spec 2.4.1; DESIGN.md section 6): may a TLP
// (the row) pass an earlier one (the column) that is waiting in the same queue?
#pragma once

#include "models/pcie/tlp.h"

namespace p2psim::pcie {

enum class order_class { posted, read_request, nonposted_write, completion };
order_class order_class_of(tlp_type t);

enum class passing {
  no,      // must not pass (producer/consumer)
  yes,     // must be able to pass (deadlock avoidance)
  either,  // Y/N: the implementation chooses
};
const char* to_string(passing p);

// `later` wants to pass `earlier`. Rules hold within one traffic class; TLPs of different
// traffic classes have no ordering relation (`either`).
passing may_pass(const tlp_header& later, const tlp_header& earlier);

}  // namespace p2psim::pcie
