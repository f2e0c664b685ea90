#include "models/dma/dma_requester.h"

#include <sysc/kernel/sc_dynamic_processes.h>  // sc_spawn
#include <span>
#include <stdexcept>

#include "models/transport/sim_clock.h"
#include "models/transport/tlp_txn.h"

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

dma_requester::dma_requester(transport::pcie_port& port, transport::tlp_pool& pool,
                             memory::backing_store& local, const requester_params& p,
                             transport::stream_log& log)
    : m_port(port),
      m_pool(pool),
      m_local(local),
      m_params(p),
      m_log(log),
      m_tags(p.tags),
      m_pipes(p.command_bytes, p.command_bytes_per_ns),
      m_reads(p.tags) {
  sc_core::sc_spawn_options o;
  o.spawn_method();
  o.set_sensitivity(&m_timeout);
  o.dont_initialize();
  sc_core::sc_spawn([this] { completion_timeout(); },
                    sc_core::sc_gen_unique_name("completion_timeout"), &o);
}

void dma_requester::arm_timeout(uint64_t at) {
  if (m_timeout_at && m_timeout_at <= at) return;
  m_timeout_at = at;
  const uint64_t now = transport::now_ps();
  m_timeout.notify(transport::ps(at > now ? at - now : 0));
}

// Gives up every read issued a completion timeout ago or earlier: its missing bytes are
// timed out, its tags free again.
void dma_requester::completion_timeout() {
  m_timeout_at = 0;
  const uint64_t now = transport::now_ps();
  uint64_t next = 0;
  for (size_t tag = 0; tag < m_reads.size(); ++tag) {
    read_slot& s = m_reads[tag];
    if (!s.outstanding) continue;
    const uint64_t due = s.issued_ps + m_params.completion_timeout_ps;
    if (due > now) {
      next = next ? std::min(next, due) : due;
      continue;
    }
    ++m_stats.completion_timeouts;
    m_log.timed_out(s.stream, s.remaining, now);
    s.remaining = 0;
    finish_read(uint16_t(tag));
  }
  if (next) arm_timeout(next);
  issue();
}

void dma_requester::finish_read(uint16_t tag) {
  read_slot& s = m_reads[tag];
  s.outstanding = false;
  m_tags.release(tag);
  m_tags.release(s.more_tags);
  s.more_tags.clear();
  if (m_tags.in_use() == 0 && m_timeout_at) {  // nothing left to time out
    m_timeout.cancel();
    m_timeout_at = 0;
  }
}

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
  a.burst_bytes = a.job.atomic ? 0 : burst_size(a.job);
  if (a.job.segments.empty()) return;  // nothing to issue
  for (const auto& seg : a.job.segments) a.left += seg.length;
  const auto& s = a.job.segments[0];
  a.split =
      pcie::request_splitter(s.bus_address, s.length, posted(a.job) ? m_params.mps : m_params.mrrs);
  advance_segment(a);  // past empty segments
  if (a.split.done()) return;
  ++m_jobs_of[posted(a.job) ? 0 : 1];
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

// A job moves in at least 16 bursts (up to burst_bytes each), so streams that share a link
// still take turns finely enough however small the job.
uint32_t dma_requester::burst_size(const dma_job& j) const {
  if (!m_params.burst_bytes) return 0;
  uint64_t bytes = 0;
  for (const auto& s : j.segments) bytes += s.length;
  const uint32_t tlp = posted(j) ? m_params.mps : m_params.mrrs;
  uint32_t size = m_params.burst_bytes;
  while (size > tlp && uint64_t(size) * 16 > bytes) size /= 2;
  return size;
}

// A burst of reads takes a tag for each request it stands for. While the tags may be what
// limits a read (its round trips do not grow: nothing queues), at most an eighth of the pool,
// so the window refills in steps fine enough to keep within a few percent of TLP fidelity.
// Once round trips show reads queueing behind each other, only the tags beyond those the
// least round trip keeps busy (m_spare_tags) queue, and a burst may take up to half of the
// pool as long as the queue does not run dry for it: while it waits for k tags, up to k - 1
// sit idle, and its k requests' completions come back bunched, about k / 2 completions
// later than TLP by TLP on average, so k - 1 + k / 2 spare tags must be queueing:
// k <= 2 (spare + 1) / 3. (Half of the pool whatever was spare, 12 tags of 128 B reads over
// a Gen1 x4 link waited for 6 where 6 to 7 were spare: the link ran dry twice in every
// 11 us, 1.28% slow, tests/data/generated/burst_tags_waiting_for_a_burst.)
uint32_t dma_requester::read_burst_tags() const {
  if (!m_reads_queue) return std::max(1u, m_tags.size() / 8);
  return std::max(1u, std::min(m_tags.size() / 2, 2 * (m_spare_tags + 1) / 3));
}

// A job's bursts grow from one TLP (1, 1, 2, 4, ...: the first two are the TLP on the wire and
// the one handed over behind it) and shrink to one again at its end (at most half of the TLPs
// it has left). TLP by TLP, a job that starts while another runs takes turns with it from its
// next TLP, and one that ends does so within a TLP of where it would; a burst that a job
// started alone (or beside one about to end) stood for many TLPs the other would have sent
// between them. Without the ramp, a DMA engine's 100000 B write, starting 0.6 us after its
// 64 KiB write, waited for two 16-TLP bursts of it where TLP by TLP it waits for three TLPs:
// both 4.7-6% fast (seed 2925).
uint32_t dma_requester::ramp_limit(const active_job& j) const {
  const uint32_t unit = posted(j.job) ? m_params.mps : m_params.mrrs;
  const uint64_t up = uint64_t(1) << (j.bursts < 2 ? 0 : std::min(j.bursts - 1, 31u));
  const uint64_t down = ((j.left + unit - 1) / unit + 1) / 2;
  return uint32_t(std::max<uint64_t>(1, std::min(up, down)));
}

// TLPs one burst of `j` stands for at most, as far as its own size, ramp and tags go.
uint32_t dma_requester::nominal_burst_tlps(const active_job& j) const {
  const uint32_t unit = posted(j.job) ? m_params.mps : m_params.mrrs;
  const uint32_t tlps = std::min(std::max(1u, j.burst_bytes / unit), ramp_limit(j));
  return posted(j.job) ? tlps : std::min(tlps, read_burst_tags());
}

// Jobs take turns TLP by TLP, so while other jobs issue too a burst stands for no more TLPs
// than theirs do: otherwise a job of large bursts would send all of them while another, of
// small ones (a small job's bursts are small: it moves in at least 16), sends one TLP, where
// TLP by TLP they alternate. Jobs of either class count: their TLPs alternate on the link.
// And a round of turns, one of each job, stands for no more TLPs than a burst of the smallest:
// TLP by TLP the jobs alternate every TLP, so where their paths part further on each path
// gets its share evenly, while whole turns send it runs of several bursts at the link's rate
// and then nothing. A GPU's writes across UPI, six 256-TLP turns in a row beside four toward
// the other root port, came faster than UPI drains and left it idle for the other four: 7%
// slow (tests/data/generated/burst_turns_grouped_by_path).
constexpr uint32_t least_turn_tlps = 16;

uint32_t dma_requester::turn_limit(const active_job& j) const {
  auto burst_tlps = [&](const active_job& a) {
    return std::max(1u, a.burst_bytes / (posted(a.job) ? m_params.mps : m_params.mrrs));
  };
  uint32_t limit = UINT32_MAX, jobs = 1, round = burst_tlps(j);
  for (const active_job& o : m_active) {
    if (&o == &j || !o.burst_bytes || !still_issues(o)) continue;
    // What it took in its last turn, if more: a job ending takes turns as it shrinks its
    // bursts, the others match each turn before they shrink too.
    limit = std::min(limit, std::max(nominal_burst_tlps(o), o.last_tlps));
    round = std::min(round, burst_tlps(o));
    ++jobs;
  }
  // No less than 16 TLPs (4 KiB at MPS 256 B, the smallest burst there is), or a requester of
  // many jobs moves TLPs, not bursts: with 63 jobs a turn of 4 TLPs put scale_64gpu within
  // 0.07% of TLP fidelity per stream, at half its speed; with 16, within 2.4% at 12 times it.
  if (jobs > 1) limit = std::min(limit, std::max(std::min(round, least_turn_tlps), round / jobs));
  return limit;
}

uint32_t dma_requester::burst_limit(const active_job& j) const {
  const uint32_t limit = std::min(turn_limit(j), ramp_limit(j));
  return posted(j.job) ? limit : std::min({m_tags.available(), read_burst_tags(), limit});
}

// Whether the tags for a whole read burst are free (or all the job still needs, or all its
// turn may take): a burst
// taken from the few tags that just came back would be small, and stay small.
bool dma_requester::burst_tags_ready(const active_job& j) const {
  const uint32_t left =
      pcie::count_requests(j.split.address(), j.split.remaining(), j.split.max_bytes());
  return m_tags.available() >= std::min({read_burst_tags(), left, turn_limit(j), ramp_limit(j)});
}

transport::tlp_txn& dma_requester::make(const pcie::tlp_header& h, uint32_t stream, bool burst,
                                        uint32_t tlps, uint32_t unit) {
  return burst ? m_pool.make_burst(h, stream, tlps, unit) : m_pool.make(h, stream);
}

bool dma_requester::issue_one(active_job& j) {
  if (waits_for_earlier(j)) return false;
  if (!posted(j.job) && (m_tags.empty() || (j.burst_bytes && !burst_tags_ready(j)))) {
    ++m_stats.tag_stalls;
    return false;
  }
  const dma_segment& seg = j.job.segments[j.segment];
  const bool burst = j.burst_bytes != 0;
  uint32_t tlps = 1;
  pcie::chunk c = burst ? j.split.next_burst(j.burst_bytes, burst_limit(j), tlps) : j.split.next();
  uint64_t local = seg.local_offset + j.segment_done;
  j.segment_done += c.length;
  j.left -= c.length;
  if (j.first_tlp == no_tlp) j.first_tlp = m_tlps;
  j.bursts += burst;
  j.last_tlps = tlps;
  m_tlps += tlps;

  pcie::tlp_header h;
  h.address = c.address;
  h.length = c.length;
  h.requester_id = m_params.bdf;
  h.attrs = j.job.attrs;
  if (posted(j.job)) {
    h.type = pcie::tlp_type::mwr;
    transport::tlp_txn& t = make(h, j.job.stream, burst, tlps, m_params.mps);
    if (auto whole = burst ? m_local.share(local, c.length) : memory::chunk_run())
      t.carry(std::move(whole));
    else
      m_local.read(local, std::span<uint8_t>(t.bytes.data(), t.bytes.size()));
    m_stats.write_tlps += tlps;
    ++m_unsent[0];
    m_port.send(t);
  } else {
    h.type = j.job.atomic.value_or(pcie::tlp_type::mrd);
    h.tag = m_tags.acquire();
    // An AtomicOp's completion brings back the old value, at the address of the request.
    const uint32_t expected = j.job.atomic ? pcie::atomic_result_bytes(h.type, c.length) : c.length;
    read_slot& slot = m_reads[h.tag];
    slot.stream = j.job.stream;
    slot.address = c.address;
    slot.local_offset = local;
    slot.remaining = expected;
    slot.more_tags.clear();
    m_tags.acquire(tlps - 1, slot.more_tags);
    slot.issued_ps = transport::now_ps();
    slot.outstanding = true;
    arm_timeout(slot.issued_ps + m_params.completion_timeout_ps);
    m_stats.max_tags_in_use = std::max(m_stats.max_tags_in_use, m_tags.in_use());
    transport::tlp_txn& t = make(h, j.job.stream, burst, tlps, m_params.mrrs);
    if (j.job.atomic) m_local.read(local, std::span<uint8_t>(t.bytes.data(), t.bytes.size()));
    (j.job.atomic ? m_stats.atomics : m_stats.read_requests) += tlps;
    ++m_unsent[1];
    m_port.send(t);
  }
  advance_segment(j);
  return true;
}

// Whether a job of either class may issue now: one whose class has room in the window.
bool dma_requester::window_open() const {
  for (int c = 0; c < 2; ++c)
    if (m_jobs_of[c] && m_unsent[c] < issue_window) return true;
  return false;
}

bool dma_requester::still_issues(const active_job& o) const {
  return !o.job.segments.empty() && !o.split.done() && !waits_for_earlier(o);
}

bool dma_requester::others_take_turns(const active_job& j) const {
  for (const active_job& o : m_active)
    if (&o != &j && still_issues(o)) return true;
  return false;
}

void dma_requester::pop_front_job() {
  --m_jobs_of[posted(m_active.front().job) ? 0 : 1];
  m_active.pop_front();
}

// Round robin: the front job issues a TLP (or burst) and goes to the back; one that cannot
// goes to the back too, until every job has had its try. When no class has room in the
// window, none can issue: a whole round of tries would leave the order as it is, so it is
// skipped (with a copy engine's 63 jobs at 64 GPUs, it was most of the requester's cost).
void dma_requester::issue() {
  if (m_issuing) return;
  m_issuing = true;
  size_t blocked = 0;  // consecutive jobs that could not issue
  while (!m_active.empty() && blocked < m_active.size()) {
    if (blocked == 0 && !window_open()) break;
    active_job& j = m_active.front();
    if (m_unsent[posted(j.job) ? 0 : 1] < issue_window && issue_one(j)) {
      blocked = 0;
      if (j.split.done()) {
        // TLP by TLP the job that started first keeps the lead its first turns gave it, which
        // bursts' turns do not keep exactly (docs/architecture.md, "Ramps"): a job that ends
        // while others still take turns with it may end up to 2 of the requester's TLPs apart
        // from TLP fidelity, which only a short job's bandwidth shows (burst_warnings names
        // its link).
        if (j.burst_bytes && m_tlps - j.first_tlp < short_turns_tlps && others_take_turns(j))
          ++m_stats.short_jobs_ended_in_turns;
        pop_front_job();  // everything issued; completions finish the stream
      } else
        m_active.splice(m_active.end(), m_active, m_active.begin());
    } else {
      ++blocked;
      m_active.splice(m_active.end(), m_active, m_active.begin());
    }
  }
  m_issuing = false;
}

void dma_requester::sent(tlm::tlm_generic_payload& gp) {
  --m_unsent[transport::hdr(gp).type == pcie::tlp_type::mwr ? 0 : 1];
  // A burst began to leave with its first TLP, before the link told of it.
  const auto& m = transport::meta(gp);
  m_log.started(m.stream, m.told_at_last_start ? m.first_start_ps : transport::now_ps());
  issue();
}

void dma_requester::completion(tlm::tlm_generic_payload& gp) {
  store_completion(gp);
  m_port.free_buffer(gp);
  gp.release();
}

// A completion burst's requests each end with their last completion. Where reads queue
// behind each other (round trips twice the least seen), TLP by TLP their completions come
// back to back as in the burst, and each tag is free once its own last completion is in:
// for n requests, on average (n + 1) / 2n of the way through the burst's lag (all of it for
// one request). Where they do not, the tags are what limits the read: TLP by TLP each tag
// is reused as it comes back, so the requests go out, and their completions come back,
// spread out rather than bunched as in the burst, and each tag is back one request's
// completions after its first one: 1 / n of the way. (Halfway for every burst, as before,
// one tag and 4 KiB requests in 64 B completions read host memory 7.6% fast, and 32 tags
// with 512 B requests 2.1% slow: tests/data/generated/burst_tags_*.)
uint64_t dma_requester::completion_burst_wait_ps(const tlm::tlm_generic_payload& gp) const {
  const auto& m = transport::meta(gp);
  const uint64_t n = m.requests_ended;
  if (n == 0) return m.lag_ps / 2;  // it ends no request: nothing waits for it
  return m_reads_queue ? m.lag_ps * (n + 1) / (2 * n) : m.lag_ps / n;
}

void dma_requester::store_completion(tlm::tlm_generic_payload& gp) {
  const auto& h = transport::hdr(gp);
  read_slot& s = m_reads[h.tag];
  if (!s.outstanding) {  // its read was given up (completion timeout): nothing waits for it
    ++m_stats.unexpected_completions;
    return;
  }
  m_stats.completions += transport::meta(gp).tlps;
  if (h.status != pcie::cpl_status::sc || h.type == pcie::tlp_type::cpl) {
    ++m_stats.error_completions;
    m_log.failed(s.stream, s.remaining, transport::now_ps());
    s.remaining = 0;
  } else {
    // Completions of one request arrive in address order (PCIe ordering: same transaction
    // ID never passes), so the data goes right after what came before.
    const transport::tlp_txn& t = transport::txn(gp);
    if (!t.shared || !m_local.adopt(s.local_offset, t.shared))
      t.for_each_piece([&](uint64_t at, std::span<const uint8_t> piece) {
        m_local.write(s.local_offset + at, piece);
      });
    const auto& m = transport::meta(gp);
    const uint64_t now = transport::now_ps(), last_in = now + m.lag_ps;
    const uint64_t landed_at = m_pipes.land(s.stream, s.local_offset, h.length, m.tlps,
                                            m.first_in_ps ? m.first_in_ps : now, last_in, now);
    s.local_offset += h.length;
    s.address += h.length;
    s.remaining -= std::min(s.remaining, h.length);
    m_log.landed(s.stream, h.length, landed_at);
  }
  if (s.remaining == 0) {
    // A burst's round trip is its requests' on average: from its first request leaving to
    // halfway through its completions (whenever it was taken in, which depends on the round
    // trips seen: measured at that time, a read whose tags came back early would never seem
    // to queue).
    const auto& m = transport::meta(gp);
    const uint64_t now = transport::now_ps();
    const uint64_t rtt =
        (m.first_in_ps ? m.first_in_ps + (now + m.lag_ps - m.first_in_ps) / 2 : now) - s.issued_ps;
    auto& min_rtt = m_stats.min_read_round_trip_ps;
    min_rtt = min_rtt ? std::min(min_rtt, rtt) : rtt;
    if (m.burst) {
      const auto least = m_min_read_rtt.try_emplace(h.completer_id, rtt).first;
      least->second = std::min(least->second, rtt);
      m_reads_queue = rtt >= 2 * least->second;
      // In a steady queue the tags take turns evenly around the round trip: the share of it
      // beyond the least round trip is the share of the tags that wait in the queue.
      m_spare_tags = uint32_t(m_tags.size() * (rtt - least->second) / rtt);
    }
    finish_read(h.tag);
    issue();
  }
}

}  // namespace p2psim::dma
