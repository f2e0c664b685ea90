// Where the bytes of each DMA stream went and when: the component that stores a stream's
// data (a memory for writes, the requester for read completions) reports it here. The
// scenario runner waits on a stream's event and computes bandwidth and latency from it.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <systemc>
#include <vector>

namespace p2psim::transport {

struct stream_record {
  uint64_t expected_bytes = 0;
  uint64_t landed_bytes = 0;
  uint64_t failed_bytes = 0;     // refused: Unsupported Request, Completer Abort, unmapped
  uint64_t lost_bytes = 0;       // posted writes dropped by a link that went down
  uint64_t timed_out_bytes = 0;  // reads whose completions never came (completion timeout)
  uint64_t submit_ps = 0;        // the job was handed to the engine
  // Its first TLP started on the wire, or, for a device whose own work before the first TLP is
  // part of the transfer (an SSD's command and flash read), the doorbell. Valid once
  // `has_started` (a start at time 0 is a start).
  uint64_t first_start_ps = 0;
  bool has_started = false;
  uint64_t last_land_ps = 0;  // its last byte was stored
  uint64_t undelivered_bytes() const { return failed_bytes + lost_bytes + timed_out_bytes; }
  bool finished() const { return landed_bytes + undelivered_bytes() >= expected_bytes; }
  // The threads waiting for it to finish (wait_finished), woken when it does.
  std::vector<sc_core::sc_event*> waiters;
};

class stream_log {
 public:
  uint32_t open(uint64_t expected_bytes);
  stream_record& operator[](uint32_t id) { return m_records[id]; }
  const stream_record& operator[](uint32_t id) const { return m_records[id]; }
  void started(uint32_t id, uint64_t now_ps) {
    if (id && !m_records[id].has_started) {
      m_records[id].first_start_ps = now_ps;
      m_records[id].has_started = true;
    }
  }
  void landed(uint32_t id, uint64_t bytes, uint64_t now_ps);
  void failed(uint32_t id, uint64_t bytes, uint64_t now_ps);
  void lost(uint32_t id, uint64_t bytes, uint64_t now_ps);
  void timed_out(uint32_t id, uint64_t bytes, uint64_t now_ps);
  // Notified whenever any stream finishes.
  sc_core::sc_event& finished_event() { return m_finished; }
  // From a SystemC thread: returns once stream `id` has finished (at once if it has). Only
  // this thread wakes for it: with thousands of streams at once, every stream's end woke
  // every thread still waiting on finished_event().
  void wait_finished(uint32_t id);

 private:
  void account(uint32_t id, uint64_t stream_record::*field, uint64_t bytes, uint64_t now);
  std::deque<stream_record> m_records{1};  // id 0: traffic that belongs to no stream
  sc_core::sc_event m_finished;
};

// From a SystemC thread: returns once every stream of `ids` has finished and its last byte
// has landed (a write's last landing may come a little after the stream's event fires).
void wait_until_landed(stream_log& log, std::span<const uint32_t> ids);
inline void wait_until_landed(stream_log& log, uint32_t id) {
  wait_until_landed(log, std::span<const uint32_t>(&id, 1));
}

}  // namespace p2psim::transport
