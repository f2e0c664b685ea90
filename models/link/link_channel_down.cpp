// A link_channel when things go wrong: the link going down (DL_Down: what is queued or handed
// over later is discarded and counted), and what holds its TLPs when a run stalls.
#include <string>

#include "models/link/link_channel.h"
#include "models/transport/sim_clock.h"
#include "models/transport/stream_log.h"
#include "models/transport/tlp_txn.h"

namespace p2psim::link {

using namespace sc_core;

std::string link_channel::blocked() const {
  const int cls = oldest_class();
  if (cls < 0) return "";
  const size_t queued = m_queue[0].size() + m_queue[1].size() + m_queue[2].size();
  const tlm::tlm_generic_payload& oldest = *m_queue[cls].front().gp;
  const auto c = pcie::fc_class_of(transport::hdr(oldest).type);
  const pcie::credit_cost need = credit_cost_of(oldest);
  return std::to_string(queued) + " TLPs queued; the oldest needs " + std::to_string(need.header) +
         " header and " + std::to_string(need.data) +
         " data credits of its class, the receiver has " +
         std::to_string(m_credits.header_available(c)) + " and " +
         std::to_string(m_credits.data_available(c)) + " free";
}

std::string link_channel::unbalanced_credits() const {
  static const char* const names[] = {"posted", "non-posted", "completion"};
  std::string out;
  if (down()) return out;  // what was on its wire was discarded, not freed
  for (int c = 0; c < pcie::fc_class_count; ++c) {
    const pcie::credit_balance b = m_credits.outstanding(pcie::fc_class(c));
    if (b.header == 0 && b.data == 0) continue;
    out += std::string(out.empty() ? "" : "; ") + names[c] + ": " + std::to_string(b.header) +
           " header and " + std::to_string(b.data) + " data credits not returned";
  }
  return out;
}

void link_channel::go_down(transport::stream_log& log) {
  m_log_when_down = &log;
  tell_departures(UINT64_MAX);  // started before the link went down: they have left
  // Started ahead, their start still to come: dropped, as if they had stayed queued (the
  // receiving port, which holds them, counts their stream's lost bytes).
  settle_started_ahead(transport::now_ps());
  for (const started_ahead& a : m_started_ahead) {
    m_stats.dropped_tlps += a.counts.tlps;
    m_stats.dropped_bytes += a.counts.payload_bytes;
  }
  m_started_ahead.clear();
  for (auto& q : m_queue) {
    pcie::fifo<entry> gone;
    gone.swap(q);
    for (const entry& e : gone) drop(*e.gp);
  }
}

void link_channel::drop(tlm::tlm_generic_payload& gp) {
  const auto& h = transport::hdr(gp);
  const auto& m = transport::meta(gp);
  const uint64_t payload = pcie::has_data(h.type) ? h.length : 0;
  m_stats.dropped_tlps += m.tlps;  // a burst stands for many
  m_stats.dropped_bytes += payload;
  if (h.type == pcie::tlp_type::mwr) m_log_when_down->lost(m.stream, payload, transport::now_ps());
  tlm::tlm_phase bw = tlm::END_REQ;  // the sender's buffer is free: the TLP is gone
  sc_time zero = SC_ZERO_TIME;
  in->nb_transport_bw(gp, bw, zero);
  gp.release();
}

}  // namespace p2psim::link
