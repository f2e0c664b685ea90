// What every completer (host memory, GPU BAR, device memory, a root complex that refuses a
// request) sends back for a read: CplD TLPs split at the completer's size and the RCB, each
// with the byte count still outstanding and the low address bits (PCIe Base Spec 2.3.1.1).
#pragma once

#include <cstdint>
#include <span>
#include <systemc>

#include "models/pcie/completion.h"
#include "models/pcie/split.h"
#include "models/transport/pcie_port.h"
#include "models/transport/stream_log.h"
#include "models/transport/tlp_txn.h"

namespace p2psim::dma {

// A completer only answers requests, so the completions it sends come from the pool of the
// request they answer (`transport::tlp_pool::of(request)`): that of its simulation.

// Sends the completions for read request `req`, reading the data through
// read(address, span). They leave no earlier than now + not_before.
template <typename ReadFn>
void send_completions(transport::pcie_port& port, transport::tlp_pool& pool,
                      const pcie::tlp_header& req, uint32_t stream, uint16_t completer_id,
                      uint32_t cpl_bytes, uint32_t rcb, const sc_core::sc_time& not_before,
                      ReadFn&& read) {
  uint32_t remaining = req.length;
  pcie::tlp_header c = pcie::completion_for(req, completer_id);
  uint64_t a = req.address, end = req.address + req.length;
  while (a < end) {
    const uint64_t stop = pcie::completion_stop(a, end, cpl_bytes, rcb);
    c.address = a;
    c.length = uint32_t(stop - a);
    c.byte_count = remaining;
    c.lower_address = uint8_t(a & 0x7f);
    transport::tlp_txn& t = pool.make(c, stream);
    read(a, std::span<uint8_t>(t.bytes.data(), t.bytes.size()));
    port.send(t, not_before);
    remaining -= c.length;
    a = stop;
  }
}

// Burst fidelity: the completions for a burst of read requests, as one CplD burst that
// stands for every completion send_completions would have cut for each of its requests.
template <typename ReadFn>
void send_completion_burst(transport::pcie_port& port, transport::tlp_pool& pool,
                           const pcie::tlp_header& req, const pcie::tlp_meta& req_meta,
                           uint16_t completer_id, uint32_t cpl_bytes, uint32_t rcb,
                           const sc_core::sc_time& not_before, uint64_t lag_ps,
                           memory::chunk_run whole, ReadFn&& read) {
  pcie::tlp_header c = pcie::completion_for(req, completer_id);
  c.length = req.length;
  transport::tlp_txn& t = pool.make_burst(
      c, req_meta.stream,
      pcie::count_completions(req.address, req.length, req_meta.unit, cpl_bytes, rcb), cpl_bytes);
  const pcie::end_tlps ends =
      pcie::completion_ends(req.address, req.length, req_meta.unit, cpl_bytes, rcb);
  t.ext.meta.first_bytes = ends.first;
  t.ext.meta.last_bytes = ends.last;
  t.ext.meta.lag_ps = lag_ps;  // its last completion is ready this much after the first
  t.ext.meta.requests_ended = req_meta.tlps;
  if (whole)  // whole chunks of the completer's memory: carried, not copied
    t.carry(std::move(whole));
  else
    read(req.address, std::span<uint8_t>(t.bytes.data(), t.bytes.size()));
  port.send(t, not_before);
}

// A completion without data carrying an error status (UR or CA) for a refused request.
void send_error_completion(transport::pcie_port& port, transport::tlp_pool& pool,
                           const pcie::tlp_header& req, uint32_t stream, uint16_t completer_id,
                           pcie::cpl_status status, const sc_core::sc_time& not_before);

// Refuses request `gp`, delivered at `port`: a non-posted one is answered with a completion
// of `status` (leaving no earlier than now + not_before), a posted one is dropped, its bytes
// counted as failed in `log` where there is one. Either way its receive buffer is freed.
void refuse_request(transport::pcie_port& port, tlm::tlm_generic_payload& gp, uint16_t completer_id,
                    pcie::cpl_status status, const sc_core::sc_time& not_before,
                    transport::stream_log* log);

}  // namespace p2psim::dma
