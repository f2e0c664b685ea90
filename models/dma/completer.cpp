#include "models/dma/completer.h"

#include "models/transport/sim_clock.h"

namespace p2psim::dma {

void send_error_completion(transport::pcie_port& port, transport::tlp_pool& pool,
                           const pcie::tlp_header& req, uint32_t stream, uint16_t completer_id,
                           pcie::cpl_status status, const sc_core::sc_time& not_before) {
  pcie::tlp_header c = pcie::completion_for(req, completer_id);
  c.type = pcie::tlp_type::cpl;
  c.status = status;
  port.send(pool.make(c, stream), not_before);
}

void refuse_request(transport::pcie_port& port, tlm::tlm_generic_payload& gp, uint16_t completer_id,
                    pcie::cpl_status status, const sc_core::sc_time& not_before,
                    transport::stream_log* log) {
  const auto& h = transport::hdr(gp);
  const uint32_t stream = transport::meta(gp).stream;
  if (pcie::is_non_posted(h.type))
    send_error_completion(port, transport::tlp_pool::of(gp), h, stream, completer_id, status,
                          not_before);
  else if (log)
    log->failed(stream, h.length, transport::now_ps());
  port.free_buffer(gp);
  gp.release();
}

}  // namespace p2psim::dma
