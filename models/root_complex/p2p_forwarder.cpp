#include "models/root_complex/p2p_forwarder.h"

#include <algorithm>
#include <cstring>

#include "models/pcie/completion.h"
#include "models/pcie/split.h"
#include "models/pcie/time_units.h"
#include "models/transport/sim_clock.h"
#include "models/transport/stream_log.h"
#include "models/transport/tlp_txn.h"

namespace p2psim::root_complex {

p2p_forwarder::p2p_forwarder(const forwarding_spec& p, forward_ports& ports,
                             transport::tlp_pool& pool, uint64_t base_latency_ps, uint16_t tag_base)
    : m_params(p),
      m_ports(ports),
      m_pool(pool),
      m_latency_ps(base_latency_ps + pcie::ns_to_ps(p.latency_ns)),
      m_write_cap(p.write.bandwidth_gbs),
      m_read_cap(p.read.bandwidth_gbs),
      m_tag_base(tag_base) {}

bool p2p_forwarder::proxies_reads() const {
  return m_params.tlp_bytes || m_params.read.outstanding || m_params.read.bandwidth_gbs > 0;
}

void p2p_forwarder::forward(tlm::tlm_generic_payload& gp, int in, int out) {
  const auto& h = transport::hdr(gp);
  transport::txn(gp).ext.ingress_port = in;
  if (h.type == pcie::tlp_type::mwr) {
    forward_write(gp, in, out);
    return;
  }
  if (pcie::is_atomic(h.type)) {
    // Root ports here do not route AtomicOps to each other (AtomicOp Routing Supported is
    // clear, as on most CPUs): the requester gets an Unsupported Request.
    ++m_refused;
    m_ports.refused(gp, in);
    return;
  }
  if (!m_params.read.routed) {
    ++m_refused;
    m_ports.refused(gp, in);
    return;
  }
  if (!proxies_reads()) {
    m_ports.send(out, gp, m_latency_ps);
    return;
  }
  auto r = std::make_unique<proxied_read>();
  r->orig = h;
  r->orig_gp = &gp;
  r->stream = transport::meta(gp).stream;
  r->in = in;
  r->out = out;
  r->next_issue = r->next_deliver = h.address;
  r->burst_unit = transport::meta(gp).burst ? transport::meta(gp).unit : 0;
  r->end = h.address + h.length;
  if (queued_behind_burst(r->stream, transport::meta(gp).tlps)) ++m_reads_held_behind_bursts;
  m_waiting.push_back(r.get());
  m_reads.push_back(std::move(r));
  issue_reads();
}

bool p2p_forwarder::queued_behind_burst(uint32_t stream, uint32_t requests) const {
  for (const proxied_read* w : m_waiting)
    if (w->stream != stream && w->burst_unit && !w->failed &&
        pcie::count_requests(w->next_issue, w->end - w->next_issue, w->burst_unit) >=
            4 * uint64_t(std::max(1u, requests)))
      return true;
  return false;
}

// A write, or a read passed on as it is, leaves its forwarding latency later at the soonest,
// and frees its buffer then; a write's bytes pass the cap first, and one re-emitted in smaller
// TLPs is free once the last of them leaves, after the others on the wire. A refused request,
// or a read proxied (its buffer is free once its pieces are issued), may be freed sooner.
uint64_t p2p_forwarder::least_hold_ps(const pcie::tlp_header& h, uint32_t tlps,
                                      uint64_t piece_ps) const {
  if (h.type == pcie::tlp_type::mwr) {
    if (!m_params.write.routed) return 0;
    const uint32_t bytes = h.length / std::max(tlps, 1u);
    const uint64_t pieces =
        m_params.tlp_bytes ? (bytes + m_params.tlp_bytes - 1) / m_params.tlp_bytes : 1;
    return m_latency_ps + std::max(m_write_cap.time_for(bytes), (pieces - 1) * piece_ps);
  }
  if (pcie::is_atomic(h.type) || !m_params.read.routed || proxies_reads()) return 0;
  return m_latency_ps;
}

void p2p_forwarder::forward_write(tlm::tlm_generic_payload& gp, int in, int out) {
  const auto h = transport::hdr(gp);
  if (!m_params.write.routed) {
    ++m_refused;
    m_ports.refused(gp, in);
    return;
  }
  const uint64_t now = transport::now_ps();
  // A burst (of the TLPs it stands for once re-emitted) through the cap goes on whole.
  auto delay_for = [&](uint32_t bytes, uint32_t tlps = 1) {
    if (m_write_cap.limited() && tlps > 1) ++m_capped_bursts;
    uint64_t ready = m_write_cap.limited() ? m_write_cap.serve(now, bytes) : now;
    return ready - now + m_latency_ps;
  };
  if (!m_params.tlp_bytes || h.length <= m_params.tlp_bytes) {
    m_ports.send(out, gp, delay_for(h.length, transport::meta(gp).tlps));
    return;
  }
  if (auto& m = transport::meta(gp); m.burst) {
    if (m.unit <= m_params.tlp_bytes) {
      m_ports.send(out, gp, delay_for(h.length, m.tlps));
      return;
    }
    // A burst of the smaller TLPs goes on; the original's buffer is freed when it leaves.
    const auto n = uint32_t(pcie::count_requests(h.address, h.length, m_params.tlp_bytes));
    transport::tlp_txn& pieces = m_pool.re_emit(transport::txn(gp), n, m_params.tlp_bytes);
    pieces.ext.parent = &gp;
    m_ports.send(out, pieces, delay_for(h.length, n));
    return;
  }
  // Re-emit as smaller TLPs; the original's buffer is freed when the last piece leaves.
  const auto& data = transport::txn(gp).bytes;
  uint64_t a = h.address, end = h.address + h.length;
  while (a < end) {
    uint64_t stop = std::min<uint64_t>(end, (a / m_params.tlp_bytes + 1) * m_params.tlp_bytes);
    pcie::tlp_header piece = h;
    piece.address = a;
    piece.length = uint32_t(stop - a);
    transport::tlp_txn& t = m_pool.make(piece, transport::meta(gp).stream);
    std::memcpy(t.bytes.data(), data.data() + (a - h.address), piece.length);
    if (stop == end) t.ext.parent = &gp;
    m_ports.send(out, t, delay_for(piece.length));
    a = stop;
  }
}

void p2p_forwarder::issue_reads() {
  while (!m_waiting.empty()) {
    proxied_read* r = m_waiting.front();
    if (!r->failed) {
      if (m_params.read.outstanding && m_in_flight >= m_params.read.outstanding) return;
      if (m_tags.empty()) return;
      uint32_t requests = 1;
      const uint64_t stop = next_stop(*r, requests);
      pcie::tlp_header h;
      h.type = pcie::tlp_type::mrd;
      h.address = r->next_issue;
      h.length = uint32_t(stop - r->next_issue);
      h.requester_id = m_ports.own_id();
      h.attrs = r->orig.attrs;
      // Not IDO: it lets a request pass TLPs of other requesters, and under the root complex's
      // ID the read would pass the writes its own requester sent before it, which the root
      // complex forwards under theirs (PCIe Base 2.4.1: a read must not pass its requester's
      // earlier writes; litmus RAW+IDO on single_rc and cross_qpi saw it stale).
      h.attrs.id_based_ordering = false;
      uint16_t slot = m_tags.acquire();
      h.tag = uint16_t(m_tag_base + slot);
      sub_read& sub = m_subs[slot];
      sub.read = r;
      sub.remaining = h.length;
      sub.requests = requests;
      sub.more_tags.clear();
      m_tags.acquire(requests - 1, sub.more_tags);
      m_in_flight += requests;
      ++r->in_flight;
      r->next_issue = stop;
      const uint32_t unit = m_params.tlp_bytes ? m_params.tlp_bytes : r->burst_unit;
      m_ports.send(r->out,
                   r->burst_unit ? m_pool.make_burst(h, r->stream, requests, unit)
                                 : m_pool.make(h, r->stream),
                   m_latency_ps);
      if (r->next_issue < r->end) continue;
    }
    // Every piece issued (or the read failed): the original request's buffer is free.
    m_waiting.pop_front();
    m_ports.free_buffer(r->in, *r->orig_gp);
    r->orig_gp->release();
    r->orig_gp = nullptr;
    finish_if_done(r);
  }
}

uint64_t p2p_forwarder::next_stop(const proxied_read& r, uint32_t& requests) const {
  const uint32_t piece = m_params.tlp_bytes;
  if (!r.burst_unit) {  // one request at a time, cut at the re-emit size
    requests = 1;
    return piece ? std::min<uint64_t>(r.end, (r.next_issue / piece + 1) * piece) : r.end;
  }
  // A burst: as many requests as tags and the outstanding limit allow, in one sub-read.
  uint32_t room = m_tags.available();
  if (m_params.read.outstanding)
    room = std::min(room,
                    m_params.read.outstanding - std::min(m_params.read.outstanding, m_in_flight));
  const uint32_t unit = piece ? std::min(piece, r.burst_unit) : r.burst_unit;
  pcie::request_splitter split(r.next_issue, r.end - r.next_issue, unit);
  pcie::chunk c = split.next_burst(uint64_t(1) << 62, std::max(1u, room), requests);
  return c.address + c.length;
}

void p2p_forwarder::deliver(proxied_read& r, uint64_t address, const uint8_t* data, uint32_t len,
                            const completion_shape& shape) {
  auto emit = [&](uint64_t a, const uint8_t* bytes, uint32_t n, const completion_shape& in) {
    pcie::tlp_header c = pcie::completion_for(r.orig, m_ports.own_id());
    c.address = a;
    c.length = n;
    c.byte_count = uint32_t(r.end - a);
    c.lower_address = uint8_t(a & 0x7f);
    transport::tlp_txn& t =
        r.burst_unit ? m_pool.make_burst(c, r.stream, in.tlps, n) : m_pool.make(c, r.stream);
    if (r.burst_unit) {  // a burst passes on as it came in
      t.ext.meta.lag_ps = in.lag_ps;
      t.ext.meta.first_bytes = in.first_bytes;
      t.ext.meta.last_bytes = in.last_bytes;
      // The original requests it ends: their last bytes are in it.
      const uint64_t end = a + n;
      t.ext.meta.requests_ended = uint32_t(end / r.burst_unit - a / r.burst_unit) +
                                  (end == r.end && end % r.burst_unit != 0);
    }
    std::memcpy(t.bytes.data(), bytes, n);
    uint64_t now = transport::now_ps();
    uint64_t ready = m_read_cap.limited() ? m_read_cap.serve(now, n) : now;
    if (m_read_cap.limited() && in.tlps > 1) ++m_capped_bursts;
    m_ports.send(r.in, t, ready - now + m_latency_ps);
    r.next_deliver = a + n;
  };
  if (address != r.next_deliver) {
    r.early[address] = {std::vector<uint8_t>(data, data + len), shape};
    return;
  }
  emit(address, data, len, shape);
  for (auto it = r.early.find(r.next_deliver); it != r.early.end();
       it = r.early.find(r.next_deliver)) {
    const auto& e = it->second;
    emit(it->first, e.bytes.data(), uint32_t(e.bytes.size()), e.shape);
    r.early.erase(it);
  }
}

bool p2p_forwarder::completion(tlm::tlm_generic_payload& gp, int in) {
  const auto& h = transport::hdr(gp);
  const int slot = int(h.tag) - m_tag_base;
  if (h.requester_id != m_ports.own_id() || slot < 0 || slot >= int(m_subs.size()) ||
      !m_subs[slot].read)
    return false;
  sub_read& s = m_subs[slot];
  proxied_read* r = s.read;
  if (h.status != pcie::cpl_status::sc || h.type == pcie::tlp_type::cpl) {
    if (!r->failed) {
      r->failed = true;
      pcie::tlp_header c;
      c.type = pcie::tlp_type::cpl;
      c.status = h.status == pcie::cpl_status::sc ? pcie::cpl_status::ca : h.status;
      c.requester_id = r->orig.requester_id;
      c.tag = r->orig.tag;
      c.completer_id = m_ports.own_id();
      c.byte_count = uint32_t(r->end - r->next_deliver);
      m_ports.send(r->in, m_pool.make(c, r->stream), m_latency_ps);
    }
    s.remaining = 0;
  } else {
    const auto& m = transport::meta(gp);
    deliver(*r, h.address, transport::txn(gp).payload().data(), h.length,
            {m.tlps, m.lag_ps, m.first_bytes, m.last_bytes});
    s.remaining -= std::min(s.remaining, h.length);
  }
  m_ports.free_buffer(in, gp);
  gp.release();
  if (s.remaining == 0) {
    s.read = nullptr;
    m_tags.release(uint16_t(slot));
    m_tags.release(s.more_tags);
    s.more_tags.clear();
    m_in_flight -= s.requests;
    --r->in_flight;
    finish_if_done(r);
    issue_reads();
  }
  return true;
}

void p2p_forwarder::finish_if_done(proxied_read* r) {
  if (r->orig_gp || r->in_flight) return;  // pieces still to issue or in flight
  auto it = std::find_if(m_reads.begin(), m_reads.end(), [&](auto& p) { return p.get() == r; });
  if (it != m_reads.end()) m_reads.erase(it);
}

}  // namespace p2psim::root_complex
