#include "models/dma/dma_requester.h"

#include <span>
#include <stdexcept>

#include "models/link/tlp_txn.h"

namespace p2psim::dma {

namespace {
// TLPs the requester keeps handed to its link but not yet started: enough to keep the
// serializer busy back to back, few enough that flow control, not a deep software queue,
// decides who goes next.
constexpr int issue_window = 1;

// A memory write: the only kind of job whose TLPs are posted (no completion comes back).
bool posted(const dma_job& j) {
  return j.write && !j.atomic;
}
}  // namespace

dma_requester::dma_requester(link::pcie_port& port, memory::backing_store& local,
                             const requester_params& p, link::stream_log& log)
    : m_port(port), m_local(local), m_params(p), m_log(log), m_tags(p.tags), m_reads(p.tags) {}

void dma_requester::submit(dma_job job) {
  if (job.atomic) {
    const bool cas = *job.atomic == pcie::tlp_type::cas;
    const uint64_t n = job.segments.size() == 1 ? job.segments[0].length : 0;
    const bool sized = cas ? (n == 8 || n == 16) : (n == 4 || n == 8);
    // The target address is aligned to the operand's size (CAS: one operand of the two).
    if (!pcie::is_atomic(*job.atomic) || !sized ||
        job.segments[0].bus_address % pcie::atomic_result_bytes(*job.atomic, uint32_t(n)))
      throw std::invalid_argument(
          "an AtomicOp is one naturally aligned operand of 4 or 8 bytes (CAS: two)");
  }
  active_job a;
  a.job = std::move(job);
  a.segment = 0;
  a.seq = m_submitted++;
  if (!a.job.segments.empty()) {
    const auto& s = a.job.segments[0];
    a.split = pcie::request_splitter(s.bus_address, s.length,
                                     posted(a.job) ? m_params.mps : m_params.mrrs);
  }
  m_active.push_back(std::move(a));
  issue();
}

void dma_requester::advance_segment(active_job& j) {
  while (j.split.done() && j.segment + 1 < j.job.segments.size()) {
    ++j.segment;
    j.segment_done = 0;
    const auto& s = j.job.segments[j.segment];
    j.split = pcie::request_splitter(s.bus_address, s.length,
                                     posted(j.job) ? m_params.mps : m_params.mrrs);
  }
}

bool dma_requester::issued(uint32_t stream) const {
  for (const auto& j : m_active)
    if (j.job.stream == stream && !j.job.segments.empty() && !j.split.done()) return false;
  return true;
}

bool dma_requester::waits_for_earlier(const active_job& j) const {
  if (!j.job.in_order) return false;
  for (const auto& o : m_active)
    if (o.seq < j.seq && !o.job.segments.empty() && !o.split.done()) return true;
  return false;
}

bool dma_requester::issue_one(active_job& j) {
  if (waits_for_earlier(j)) return false;
  if (!posted(j.job) && m_tags.empty()) {
    ++m_stats.tag_stalls;
    return false;
  }
  const dma_segment& seg = j.job.segments[j.segment];
  pcie::chunk c = j.split.next();
  uint64_t local = seg.local_offset + j.segment_done;
  j.segment_done += c.length;

  pcie::tlp_header h;
  h.address = c.address;
  h.length = c.length;
  h.requester_id = m_params.bdf;
  h.attrs = j.job.attrs;
  if (posted(j.job)) {
    h.type = pcie::tlp_type::mwr;
    link::tlp_txn& t = link::tlp_pool::instance().make(h, j.job.stream);
    m_local.read(local, std::span<uint8_t>(t.bytes.data(), t.bytes.size()));
    ++m_stats.writes;
    ++m_unsent[0];
    m_port.send(t);
  } else {
    h.type = j.job.atomic.value_or(pcie::tlp_type::mrd);
    h.tag = m_tags.acquire();
    m_stats.max_tags_in_use = std::max(m_stats.max_tags_in_use, m_tags.in_use());
    // An AtomicOp's completion brings back the old value, at the address of the request.
    const uint32_t expected = j.job.atomic ? pcie::atomic_result_bytes(h.type, c.length) : c.length;
    m_reads[h.tag] = {j.job.stream, c.address, local, expected};
    link::tlp_txn& t = link::tlp_pool::instance().make(h, j.job.stream);
    if (j.job.atomic) m_local.read(local, std::span<uint8_t>(t.bytes.data(), t.bytes.size()));
    ++(j.job.atomic ? m_stats.atomics : m_stats.reads);
    ++m_unsent[1];
    m_port.send(t);
  }
  advance_segment(j);
  return true;
}

void dma_requester::issue() {
  if (m_issuing) return;
  m_issuing = true;
  size_t blocked = 0;  // consecutive jobs that could not issue
  while (!m_active.empty() && blocked < m_active.size()) {
    active_job& j = m_active.front();
    if (j.job.segments.empty() || j.split.done()) {
      m_active.pop_front();  // everything issued; completions finish the stream
      blocked = 0;
      continue;
    }
    if (m_unsent[posted(j.job) ? 0 : 1] < issue_window && issue_one(j)) {
      blocked = 0;
      if (j.split.done())
        m_active.pop_front();
      else
        m_active.splice(m_active.end(), m_active, m_active.begin());
    } else {
      ++blocked;
      m_active.splice(m_active.end(), m_active, m_active.begin());
    }
  }
  m_issuing = false;
}

void dma_requester::sent(tlm::tlm_generic_payload& gp) {
  --m_unsent[link::hdr(gp).type == pcie::tlp_type::mwr ? 0 : 1];
  m_log.started(link::meta(gp).stream, link::now_ps());
  issue();
}

void dma_requester::completion(tlm::tlm_generic_payload& gp) {
  const auto& h = link::hdr(gp);
  read_slot& s = m_reads[h.tag];
  ++m_stats.completions;
  if (h.status != pcie::cpl_status::sc || h.type == pcie::tlp_type::cpl) {
    ++m_stats.error_completions;
    m_log.failed(s.stream, s.remaining, link::now_ps());
    s.remaining = 0;
  } else {
    // Completions of one request arrive in address order (PCIe ordering: same transaction
    // ID never passes), so the data goes right after what came before.
    m_local.write(s.local_offset, std::span<const uint8_t>(link::txn(gp).bytes));
    s.local_offset += h.length;
    s.address += h.length;
    s.remaining -= std::min(s.remaining, h.length);
    m_log.landed(s.stream, h.length, link::now_ps());
  }
  if (s.remaining == 0) {
    m_tags.release(h.tag);
    issue();
  }
}

}  // namespace p2psim::dma
