// The completion a completer sends back for a request (PCIe Base Spec 2.2.9): routed to the
// requester by its ID and tag, with the request's attributes.
#pragma once

#include <cstdint>

#include "models/pcie/tlp.h"

namespace p2psim::pcie {

// The header of a CplD answering all of `req` from `completer_id`, but for its length: one
// cut into pieces sets address, length, byte count and lower address per piece; a Cpl
// without data sets the type and the status.
inline tlp_header completion_for(const tlp_header& req, uint16_t completer_id) {
  tlp_header c;
  c.type = tlp_type::cpld;
  c.requester_id = req.requester_id;
  c.completer_id = completer_id;
  c.tag = req.tag;
  c.attrs = req.attrs;  // completions carry the request's RO, IDO and TC
  c.address = req.address;
  c.byte_count = req.length;
  c.lower_address = uint8_t(req.address & 0x7f);
  return c;
}

}  // namespace p2psim::pcie
