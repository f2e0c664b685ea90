#include "models/dma/completer.h"

namespace p2psim::dma {

void send_error_completion(transport::pcie_port& port, const pcie::tlp_header& req, uint32_t stream,
                           uint16_t completer_id, pcie::cpl_status status,
                           const sc_core::sc_time& not_before) {
  pcie::tlp_header c;
  c.type = pcie::tlp_type::cpl;
  c.requester_id = req.requester_id;
  c.completer_id = completer_id;
  c.tag = req.tag;
  c.status = status;
  c.byte_count = req.length;
  c.address = req.address;
  c.lower_address = uint8_t(req.address & 0x7f);
  c.attrs = req.attrs;
  port.send(transport::tlp_pool::instance().make(c, stream), not_before);
}

}  // namespace p2psim::dma
