// The drive's queues and its timing, as plain C++ (no SystemC), so that tests drive them
// directly and the controller's SystemC shell only turns their times into events.
//
// Host side: each job is cut into commands (cut_into_commands) handed to the I/O queue pairs
// round robin; a command that finds its submission queue full waits in that queue's host-side
// backlog. A queue holds at most depth - 1 commands (NVMe Base Spec: full when Tail + 1 ==
// Head); a command keeps its slot until its completion entry is posted, as the Linux driver
// bounds its tags per queue to depth - 1 so that the completion queue of the same depth never
// overflows. Commands of all queues run at once (many flash dies): latencies overlap, only the
// media bandwidth is shared.
//
// Controller side, per command (times in picoseconds):
//   doorbell -> start:            command_latency (SQE fetch and parse)
//   Read:  start -> data out:     read_latency, then the media transfer on the read rate
//          data out -> complete:  the bus transfer (the shell's requester)
//   Write: start -> data in:      the bus transfer (the shell's requester)
//          data in -> complete:   the media transfer on the write rate, then write_latency
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <unordered_map>
#include <vector>

#include "models/memory/throughput.h"
#include "models/nvme/nvme_command.h"
#include "models/nvme/nvme_spec.h"
#include "models/nvme/nvme_stats.h"

namespace p2psim::nvme {

// A circular queue's indices. Empty when Head == Tail, full when Tail + 1 == Head (mod depth):
// one entry always stays unused, so at most depth - 1 are occupied.
class queue_ring {
 public:
  explicit queue_ring(uint32_t depth);
  uint32_t depth() const { return m_depth; }
  uint32_t head() const { return m_head; }
  uint32_t tail() const { return m_tail; }
  bool empty() const { return m_head == m_tail; }
  bool full() const { return (m_tail + 1) % m_depth == m_head; }
  uint32_t entries() const { return (m_tail + m_depth - m_head) % m_depth; }
  // The producer fills the entry at Tail and advances it; returns the entry's slot.
  uint32_t push();
  // The consumer takes the entry at Head and advances it; returns the entry's slot.
  uint32_t pop();

 private:
  uint32_t m_depth;
  uint32_t m_head = 0, m_tail = 0;
};

struct queue_pair {
  uint16_t id = 0;  // 1-based
  queue_ring sq;
  std::deque<uint64_t> backlog;      // host side: commands waiting for a slot, in order
  std::vector<completion_entry> cq;  // every entry posted (the host consumes each at once)
};

class nvme_queues {
 public:
  explicit nvme_queues(const nvme_spec& spec);

  // Cuts `job` into commands and hands them to the queues at `now_ps`. Returns the commands
  // whose doorbell rang now (their start_ps is set); the others wait in a backlog, or, for an
  // in_order job, for the command before them. Throws std::invalid_argument if the job
  // reaches past the capacity.
  std::vector<uint64_t> submit(const job_request& job, uint64_t now_ps);

  // A Read command at its start: when its data is out of the flash, ready for the bus.
  uint64_t read_from_flash(uint64_t id);
  // A Write command whose data arrived at `arrived_ps` (`landed_bytes` of it; the rest was
  // refused or lost on the bus): when it is persisted and its completion may be posted.
  uint64_t write_to_flash(uint64_t id, uint64_t arrived_ps, uint64_t landed_bytes);
  // Posts the command's completion entry at `now_ps` and frees its slot. Returns the commands
  // whose doorbell rang as a result (from the backlog, the next of an in_order job).
  std::vector<uint64_t> complete(uint64_t id, uint64_t now_ps, status s = status::success);

  // A command from submission to completion (std::out_of_range otherwise).
  const command& at(uint64_t id) const { return m_commands.at(id); }
  uint64_t outstanding() const { return m_outstanding; }  // doorbell rung, not completed
  uint64_t waiting() const;                               // handed over, no doorbell yet
  const std::vector<queue_pair>& pairs() const { return m_pairs; }
  const nvme_spec& spec() const { return m_spec; }
  const nvme_stats& stats() const { return m_stats; }
  nvme_stats& stats() { return m_stats; }

 private:
  struct job_state {
    bool in_order = false;
    bool started = false;            // in_order: its first command was handed over
    std::deque<uint64_t> held_back;  // in_order: commands not handed over yet
    uint64_t unfinished = 0;         // commands not completed
  };
  void hand_over(uint64_t id, uint64_t now_ps, std::vector<uint64_t>& rung);
  void ring(uint64_t id, uint64_t now_ps, std::vector<uint64_t>& rung);
  void release_next(job_state& j, uint64_t now_ps, std::vector<uint64_t>& rung);
  void start_front_job(uint64_t now_ps, std::vector<uint64_t>& rung);

  nvme_spec m_spec;
  uint64_t m_command_latency_ps, m_read_latency_ps, m_write_latency_ps;
  memory::throughput m_read_media, m_write_media;
  std::vector<queue_pair> m_pairs;
  size_t m_next_pair = 0;  // round robin
  std::unordered_map<uint64_t, command> m_commands;
  // By submission order: an in_order job starts once every earlier job has completed.
  std::map<uint64_t, job_state> m_jobs;
  uint64_t m_next_command = 1, m_next_job = 1;
  uint64_t m_outstanding = 0;
  nvme_stats m_stats;
};

}  // namespace p2psim::nvme
