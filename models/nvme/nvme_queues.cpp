#include "models/nvme/nvme_queues.h"

#include <algorithm>
#include <stdexcept>

#include "models/pcie/time_units.h"

namespace p2psim::nvme {

queue_ring::queue_ring(uint32_t depth) : m_depth(depth) {
  if (depth < 2) throw std::invalid_argument("an NVMe queue has at least 2 entries");
}

uint32_t queue_ring::push() {
  if (full()) throw std::logic_error("NVMe queue full: Tail + 1 == Head");
  const uint32_t slot = m_tail;
  m_tail = (m_tail + 1) % m_depth;
  return slot;
}

uint32_t queue_ring::pop() {
  if (empty()) throw std::logic_error("NVMe queue empty: Head == Tail");
  const uint32_t slot = m_head;
  m_head = (m_head + 1) % m_depth;
  return slot;
}

nvme_queues::nvme_queues(const nvme_spec& spec)
    : m_spec(spec),
      m_command_latency_ps(pcie::ns_to_ps(spec.command_latency_ns)),
      m_read_latency_ps(pcie::ns_to_ps(spec.read_latency_ns)),
      m_write_latency_ps(pcie::ns_to_ps(spec.write_latency_ns)),
      m_read_media(spec.read_bandwidth_gbs),
      m_write_media(spec.write_bandwidth_gbs) {
  if (spec.queue_pairs < 1 || spec.queue_pairs > 65535)
    throw std::invalid_argument("NVMe queue_pairs must be 1 to 65535");
  if (spec.read_bandwidth_gbs <= 0 || spec.write_bandwidth_gbs <= 0)
    throw std::invalid_argument("NVMe media bandwidths must be above zero");
  m_pairs.reserve(spec.queue_pairs);
  for (uint32_t i = 0; i < spec.queue_pairs; ++i)
    m_pairs.push_back(queue_pair{uint16_t(i + 1), queue_ring(spec.queue_depth), {}, {}});
}

std::vector<uint64_t> nvme_queues::submit(const job_request& job, uint64_t now_ps) {
  for (const bus_segment& s : job.segments)
    if (s.flash_offset > m_spec.capacity_bytes || s.length > m_spec.capacity_bytes - s.flash_offset)
      throw std::invalid_argument("NVMe job reaches past the drive's capacity");
  std::vector<command> cut = cut_into_commands(job, m_spec.max_transfer_bytes);
  std::vector<uint64_t> rung;
  if (cut.empty()) return rung;
  const uint64_t job_id = m_next_job++;
  job_state& j = m_jobs[job_id];
  j.in_order = job.in_order;
  j.unfinished = cut.size();
  std::vector<uint64_t> ids;
  for (command& c : cut) {
    c.id = m_next_command++;
    c.job = job_id;
    ids.push_back(c.id);
    m_commands.emplace(c.id, std::move(c));
  }
  if (!j.in_order) {
    for (uint64_t id : ids) hand_over(id, now_ps, rung);
    return rung;
  }
  j.held_back.assign(ids.begin(), ids.end());
  start_front_job(now_ps, rung);
  return rung;
}

// The host puts the command on the next queue pair, or in its backlog while the submission
// queue is full (or others already wait there: they go first).
void nvme_queues::hand_over(uint64_t id, uint64_t now_ps, std::vector<uint64_t>& rung) {
  command& c = m_commands.at(id);
  queue_pair& q = m_pairs[m_next_pair];
  m_next_pair = (m_next_pair + 1) % m_pairs.size();
  c.sq = q.id;
  c.queued_ps = now_ps;
  if (q.sq.full() || !q.backlog.empty()) {
    q.backlog.push_back(id);
    ++m_stats.queue_full_stalls;
    return;
  }
  ring(id, now_ps, rung);
}

void nvme_queues::ring(uint64_t id, uint64_t now_ps, std::vector<uint64_t>& rung) {
  command& c = m_commands.at(id);
  m_pairs[c.sq - 1].sq.push();
  c.in_flight = true;
  c.doorbell_ps = now_ps;
  c.start_ps = now_ps + m_command_latency_ps;
  ++m_outstanding;
  m_stats.max_outstanding = std::max(m_stats.max_outstanding, m_outstanding);
  ++(c.op == opcode::read ? m_stats.read_commands : m_stats.write_commands);
  rung.push_back(id);
}

void nvme_queues::release_next(job_state& j, uint64_t now_ps, std::vector<uint64_t>& rung) {
  if (j.held_back.empty()) return;
  const uint64_t id = j.held_back.front();
  j.held_back.pop_front();
  hand_over(id, now_ps, rung);
}

// An in_order job starts once no earlier job is unfinished: when it is the oldest.
void nvme_queues::start_front_job(uint64_t now_ps, std::vector<uint64_t>& rung) {
  if (m_jobs.empty()) return;
  job_state& front = m_jobs.begin()->second;
  if (!front.in_order || front.started) return;
  front.started = true;
  release_next(front, now_ps, rung);
}

// The flash is read after tR; the data then moves through the media at the shared read rate.
// Commands start in doorbell order plus a constant latency, so they reach the media in the
// order they call here and the rate serves them first come, first served.
uint64_t nvme_queues::read_from_flash(uint64_t id) {
  command& c = m_commands.at(id);
  if (c.op != opcode::read) throw std::logic_error("read_from_flash: not a Read command");
  c.data_ps = m_read_media.serve(c.start_ps + m_read_latency_ps, c.length);
  m_stats.bytes_read += c.length;
  return c.data_ps;
}

uint64_t nvme_queues::write_to_flash(uint64_t id, uint64_t arrived_ps, uint64_t landed_bytes) {
  command& c = m_commands.at(id);
  if (c.op != opcode::write) throw std::logic_error("write_to_flash: not a Write command");
  c.data_ps = m_write_media.serve(arrived_ps, landed_bytes) + m_write_latency_ps;
  m_stats.bytes_written += landed_bytes;
  return c.data_ps;
}

std::vector<uint64_t> nvme_queues::complete(uint64_t id, uint64_t now_ps, status s) {
  auto it = m_commands.find(id);
  if (it == m_commands.end() || !it->second.in_flight || it->second.doorbell_ps > now_ps)
    throw std::logic_error("NVMe completion for a command not in flight");
  const command c = std::move(it->second);
  m_commands.erase(it);
  queue_pair& q = m_pairs[c.sq - 1];
  q.sq.pop();
  q.cq.push_back({c.id, c.sq, s, c.doorbell_ps, now_ps});
  --m_outstanding;
  ++m_stats.completions;
  m_stats.max_command_latency_ps = std::max(m_stats.max_command_latency_ps, now_ps - c.doorbell_ps);

  std::vector<uint64_t> rung;
  if (!q.backlog.empty()) {  // the freed slot goes to the oldest command waiting for it
    const uint64_t next = q.backlog.front();
    q.backlog.pop_front();
    ring(next, now_ps, rung);
  }
  auto j = m_jobs.find(c.job);
  if (j->second.in_order) release_next(j->second, now_ps, rung);
  if (--j->second.unfinished == 0) {
    m_jobs.erase(j);
    start_front_job(now_ps, rung);
  }
  return rung;
}

uint64_t nvme_queues::waiting() const {
  uint64_t n = 0;
  for (const queue_pair& q : m_pairs) n += q.backlog.size();
  for (const auto& [id, j] : m_jobs) n += j.held_back.size();
  return n;
}

}  // namespace p2psim::nvme
