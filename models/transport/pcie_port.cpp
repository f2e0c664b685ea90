#include "models/transport/pcie_port.h"

#include "models/link/link_channel.h"
#include "models/transport/activity.h"
#include "models/transport/sim_clock.h"
#include "models/transport/stream_log.h"
#include "models/transport/tlp_txn.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace p2psim::transport {

using namespace sc_core;

uint64_t tlp_handler::completion_burst_wait_ps(int, const tlm::tlm_generic_payload& gp) const {
  return meta(gp).lag_ps / 2;
}

pcie_port::pcie_port(sc_module_name name, tlp_handler& owner, int index)
    : sc_module(name), tx("tx"), rx("rx"), m_owner(owner), m_index(index) {
  rx.bind(static_cast<hop_forward&>(*this));
  tx.bind(static_cast<hop_backward&>(*this));
  SC_HAS_PROCESS(pcie_port);
  SC_METHOD(arrive);
  sensitive << m_arrived;
  dont_initialize();
}

void pcie_port::send(tlm::tlm_generic_payload& gp, const sc_time& not_before) {
  tlm::tlm_phase ph = tlm::BEGIN_REQ;
  sc_time d = not_before;
  tx->nb_transport_fw(gp, ph, d);
}

void pcie_port::free_buffer(tlm::tlm_generic_payload& gp, const sc_time& after) {
  tlm::tlm_phase ph = tlm::END_REQ;
  sc_time d = after;
  rx->nb_transport_bw(gp, ph, d);
}

uint64_t pcie_port::egress_serialization_ps(const pcie::tlp_header& h) const {
  return m_egress ? m_egress->serialization_ps(h) : 0;
}

void pcie_port::set_feed(const link::link_channel& feed) {
  m_feed = &feed;
  m_feed_lead_ps = feed.timing().latency_ps;
}

bool pcie_port::feed_promises_arrival_no_sooner_than(uint64_t t, promise_scope which) const {
  return m_feed && m_feed->promises_arrival_no_sooner_than(t, which);
}

void pcie_port::link_down(stream_log& log) {
  m_down_log = &log;
  while (!m_arrivals.empty()) discard(*pop_arrival());
}

void pcie_port::discard(tlm::tlm_generic_payload& gp) {
  const auto& h = hdr(gp);
  if (h.type == pcie::tlp_type::mwr) m_down_log->lost(meta(gp).stream, h.length, now_ps());
  gp.release();
}

tlm::tlm_sync_enum pcie_port::nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase&,
                                              sc_time& d) {
  if (!link_up()) {
    discard(gp);
    return tlm::TLM_ACCEPTED;
  }
  auto& m = meta(gp);
  const auto& h = hdr(gp);
  // A burst taken as its first TLP comes in, meta.lag_ps telling when the last does: by a
  // forwarder; by a completer, which answers a read burst's first request while the rest
  // still arrive, so a read's completions wait for no request but their own; and by an
  // endpoint whose memory takes bursts of writes as they come. Taken whole instead, a burst of
  // writes holds every credit it took until its last TLP is in, where TLP by TLP the first
  // TLPs' credits are back long before: 64 pieces of a 4 KiB write re-emitted by a root
  // complex took a GPU's 64 posted header credits, and the write's last byte waited for all
  // of them (generated seed 928).
  const bool taken_at_first_tlp =
      m_owner.forwards_bursts() || h.type == pcie::tlp_type::mrd ||
      (h.type == pcie::tlp_type::mwr && m.tlps > 1 && m_owner.takes_write_bursts_as_they_come());
  if (m.lag_ps && !taken_at_first_tlp) {
    // Otherwise an endpoint takes a TLP or burst once all of it is in, and a completion burst
    // when its owner's requester has the tags back (completion_burst_wait_ps).
    uint64_t wait = m.lag_ps;
    if (pcie::is_completion(h.type)) {
      m.first_in_ps = now_ps() + to_ps(d);
      wait = std::min(wait, m_owner.completion_burst_wait_ps(m_index, gp));
    }
    d += ps(wait);
    m.lag_ps -= wait;
  }
  const uint64_t at = now_ps() + to_ps(d);
  if (!m_arrivals.empty() && at < m_arrivals.back().at_ps)
    throw std::logic_error(std::string(name()) + ": TLPs must arrive in the order they were sent");
  m_arrivals.push_back({at, &gp, m.last_ser_ps, h.type, h.requester_id});
  ++m_arriving_of[int(pcie::fc_class_of(h.type))];
  if (m_arrivals.size() == 1) m_arrived.notify(d);
  return tlm::TLM_ACCEPTED;
}

tlm::tlm_sync_enum pcie_port::nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase&,
                                              sc_time& d) {
  m_owner.sent(m_index, gp, to_ps(d));
  return tlm::TLM_ACCEPTED;
}

tlm::tlm_generic_payload* pcie_port::pop_arrival() {
  const arrival& a = m_arrivals.front();
  tlm::tlm_generic_payload* gp = a.gp;
  --m_arriving_of[int(pcie::fc_class_of(a.type))];
  m_arrivals.pop_front();
  if (!m_arrivals.empty()) prefetch(*m_arrivals.front().gp);  // the next one taken in
  return gp;
}

void pcie_port::arrive() {
  note_activity(this);
  const uint64_t now = now_ps();
  while (!m_arrivals.empty() && m_arrivals.front().at_ps <= now) {
    // Taken off first: receive() may send, and a loopback could come back here.
    m_owner.receive(m_index, *pop_arrival());
  }
  if (!m_arrivals.empty()) m_arrived.notify(ps(m_arrivals.front().at_ps - now));
}

}  // namespace p2psim::transport
