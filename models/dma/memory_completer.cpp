#include "models/dma/memory_completer.h"

#include <algorithm>

#include "models/dma/completer.h"
#include "models/pcie/split.h"
#include "models/transport/sim_clock.h"
#include "models/transport/tlp_txn.h"

namespace p2psim::dma {

sc_core::sc_time memory_completer::write(tlm::tlm_generic_payload& gp, uint64_t offset,
                                         const sc_core::sc_time& extra) {
  const auto& h = transport::hdr(gp);
  const transport::tlp_txn& t = transport::txn(gp);
  if (m_on_store)
    t.for_each_piece(
        [&](uint64_t at, std::span<const uint8_t> piece) { m_on_store(offset + at, piece); });
  if (!t.shared || !m_store.adopt(offset, t.shared))
    t.for_each_piece(
        [&](uint64_t at, std::span<const uint8_t> piece) { m_store.write(offset + at, piece); });
  uint64_t now = transport::now_ps();
  pcie::tlp_meta& m = transport::meta(gp);
  // A burst taken as its first TLP came in (by a root complex) is all in lag_ps later.
  // A write takes the data path as it comes in, between the reads booked on it before.
  const uint64_t path_done = m_path.serve(now, h.length, now);
  const uint64_t done = std::max(path_done, now + m.lag_ps);
  // The bytes are stored `extra` later (a root complex's way from the root port to the
  // memory controller); the buffer is free once the data path has them.
  m_log.landed(m.stream, h.length, done + transport::to_ps(extra));
  // A burst taken once all of it was in is freed whole.
  if (m.tlps < 2 || !m.lag_ps) return transport::ps(done - now);
  // A root complex, or an endpoint that takes writes as they come (pcie_port), takes a burst
  // as its first TLP comes in: it frees the TLPs one by one, as
  // TLP by TLP each is once the data path has taken it, the first when its own bytes are
  // through, the last at `done` (the link it came by gets the credits back at that pace).
  // Freed whole at `done`, a burst held all its credits until its last TLP was in, and the
  // sender's next burst waited for them: a 256 KiB write alone on a Gen5 x16 link took 1.3%
  // longer than TLP by TLP (generated seed 815).
  const uint32_t first_bytes = m.first_bytes ? m.first_bytes : h.length / m.tlps;
  const uint64_t first_free = std::min(
      done, std::max(now, path_done - m_path.time_for(h.length) + m_path.time_for(first_bytes)));
  m.frees_over_ps = done - first_free;
  return transport::ps(first_free - now);
}

void memory_completer::read(transport::pcie_port& port, tlm::tlm_generic_payload& gp,
                            uint64_t offset, const sc_core::sc_time& extra, uint32_t max_payload) {
  const auto& h = transport::hdr(gp);
  // No TLP carries more than the MPS (PCIe Base Spec 2.2.2): a completer that returns larger
  // pieces than its requester takes splits them further.
  const uint32_t cpl_bytes =
      max_payload ? std::min(m_timing.cpl_bytes, max_payload) : m_timing.cpl_bytes;
  uint64_t now = transport::now_ps();
  // The access latency, then the request's bytes through the data path: its completions
  // leave once the data is read (they then serialize on the link one after another).
  uint64_t first_done = 0;
  const uint64_t done = book_read(gp, now, first_done);
  sc_core::sc_time when = transport::ps(done - now) + extra;
  const uint64_t base = h.address;
  auto fetch = [&](uint64_t addr, std::span<uint8_t> out) {
    if (m_on_load)
      m_on_load(offset + (addr - base), out);
    else
      m_store.read(offset + (addr - base), out);
  };
  if (const auto& m = transport::meta(gp); m.burst) {
    if (m.tlps > 1) {  // the data path holds one request's slot already
      m_read_bursts[1] = m_read_bursts[0];
      m_read_bursts[0] = {now, now + m.lag_ps, m.tlps, latency_ps() + m_path.time_for(m.unit)};
    }
    // The first request's data is read first and its completions leave then; the rest
    // follow at the data path's rate, and no sooner than their requests came in (lag_ps).
    // The first and last requests are as long as the requester cut them (up to `unit`, at
    // most the whole burst): one request of a few bytes is read in a few bytes' time.
    const uint64_t end = base + h.length;
    const uint64_t first_bytes = std::min<uint64_t>(end, (base / m.unit + 1) * m.unit) - base;
    const uint64_t last_bytes = end - std::max<uint64_t>(base, (end - 1) / m.unit * m.unit);
    const uint64_t first =
        first_done
            ? first_done
            : std::min(done, done - m_path.time_for(h.length) + m_path.time_for(first_bytes));
    const uint64_t last =
        std::max(done, now + m.lag_ps + latency_ps() + m_path.time_for(last_bytes));
    send_completion_burst(port, transport::tlp_pool::of(gp), h, m, m_id, cpl_bytes, m_timing.rcb,
                          transport::ps(first - now) + extra, last - first,
                          m_store.share(offset, h.length), fetch);
  } else
    send_completions(port, transport::tlp_pool::of(gp), h, transport::meta(gp).stream, m_id,
                     cpl_bytes, m_timing.rcb, when, fetch);
}

uint64_t memory_completer::book_read(const tlm::tlm_generic_payload& gp, uint64_t now,
                                     uint64_t& first_done) {
  const auto& h = transport::hdr(gp);
  const auto& m = transport::meta(gp);
  const uint64_t from = std::max(now + latency_ps(), after_read_bursts(now));
  first_done = 0;
  const bool trickles = m.burst && m.tlps > 1 && m.unit &&
                        m.lag_ps / (m.tlps - 1) > m_path.time_for(m.unit) &&
                        pcie::count_requests(h.address, h.length, m.unit) == m.tlps;
  if (!trickles) return m_path.serve(from, h.length, now);
  // Its requests come in further apart than the path takes for one: TLP by TLP each takes
  // the path from its arrival plus the access latency, and what comes in between them goes
  // between them. (Booked whole from the first's arrival, the burst held the path for all
  // of them at once: a drive's 64 B read of host memory that came in during a GPU's 8 KiB
  // read burst waited 174 ns for its last request, seed 2756.)
  const uint64_t end = h.address + h.length;
  uint64_t done = from, at = h.address;
  for (uint32_t k = 0; k < m.tlps; ++k) {
    const uint64_t stop = std::min(end, (at / m.unit + 1) * m.unit);
    const uint64_t in = now + m.lag_ps * k / (m.tlps - 1);
    done = m_path.serve(k ? in + latency_ps() : from, stop - at, now);
    if (!k) first_done = done;
    at = stop;
  }
  return done;
}

void memory_completer::atomic(transport::pcie_port& port, tlm::tlm_generic_payload& gp,
                              uint64_t offset, const sc_core::sc_time& extra) {
  const auto& h = transport::hdr(gp);
  const uint32_t size = pcie::atomic_result_bytes(h.type, h.length);
  std::vector<uint8_t> old(size);
  m_store.read(offset, old);
  std::vector<uint8_t> now_value = pcie::atomic_result(h.type, old, transport::txn(gp).payload());
  if (m_on_store) m_on_store(offset, now_value);
  m_store.write(offset, now_value);
  uint64_t now = transport::now_ps();
  uint64_t done = m_path.serve(std::max(now + latency_ps(), after_read_bursts(now)), size, now);
  pcie::tlp_header answer = h;  // one CplD with the old value
  answer.length = size;
  // The requester logs the returned value as it lands, as for a read.
  send_completions(
      port, transport::tlp_pool::of(gp), answer, transport::meta(gp).stream, m_id, size, size,
      transport::ps(done - now) + extra,
      [&](uint64_t, std::span<uint8_t> out) { std::copy(old.begin(), old.end(), out.begin()); });
}

uint64_t memory_completer::after_read_bursts(uint64_t arrival_ps) const {
  uint64_t t = 0;
  for (const read_burst_arrivals& b : m_read_bursts) {
    if (!b.hold || arrival_ps < b.first) continue;
    // The last of its requests that came in by then.
    uint64_t in = b.last;
    if (arrival_ps < b.last && b.requests > 1) {
      const uint64_t gap = (b.last - b.first) / (b.requests - 1);
      in = gap ? b.first + (arrival_ps - b.first) / gap * gap : b.last;
    }
    t = std::max(t, in + b.hold);
  }
  return t;
}

sc_core::sc_time memory_completer::serve(transport::pcie_port& port, tlm::tlm_generic_payload& gp,
                                         uint64_t offset, const sc_core::sc_time& extra,
                                         uint32_t max_payload) {
  const auto t = transport::hdr(gp).type;
  if (t == pcie::tlp_type::mwr) return write(gp, offset, extra);
  if (pcie::is_atomic(t))
    atomic(port, gp, offset, extra);
  else
    read(port, gp, offset, extra, max_payload);
  return sc_core::SC_ZERO_TIME;
}

}  // namespace p2psim::dma
