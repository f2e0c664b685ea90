#include "models/transport/stream_log.h"

#include <algorithm>

#include "models/transport/sim_clock.h"

namespace p2psim::transport {

uint32_t stream_log::open(uint64_t expected_bytes) {
  stream_record r;
  r.expected_bytes = expected_bytes;
  m_records.push_back(r);
  return uint32_t(m_records.size() - 1);
}

void stream_log::account(uint32_t id, uint64_t stream_record::*field, uint64_t bytes,
                         uint64_t now) {
  if (id == 0) return;
  stream_record& r = m_records[id];
  bool was = r.finished();
  r.*field += bytes;
  // The latest, not the last told: a device that moves data on after it arrives (command
  // pipes side by side) may finish an earlier piece after a later one.
  r.last_land_ps = std::max(r.last_land_ps, now);
  if (was || !r.finished()) return;
  m_finished.notify(sc_core::SC_ZERO_TIME);
  for (sc_core::sc_event* e : r.waiters) e->notify(sc_core::SC_ZERO_TIME);
  r.waiters.clear();
}

void stream_log::wait_finished(uint32_t id) {
  if (m_records[id].finished()) return;
  // On this thread's stack: it is notified before the thread resumes, and the thread resumes
  // before it goes. A deque's records stay where they are as streams are opened.
  sc_core::sc_event done;
  m_records[id].waiters.push_back(&done);
  sc_core::wait(done);
}

void stream_log::landed(uint32_t id, uint64_t bytes, uint64_t now) {
  account(id, &stream_record::landed_bytes, bytes, now);
}

void stream_log::failed(uint32_t id, uint64_t bytes, uint64_t now) {
  account(id, &stream_record::failed_bytes, bytes, now);
}

void stream_log::lost(uint32_t id, uint64_t bytes, uint64_t now) {
  account(id, &stream_record::lost_bytes, bytes, now);
}

void stream_log::timed_out(uint32_t id, uint64_t bytes, uint64_t now) {
  account(id, &stream_record::timed_out_bytes, bytes, now);
}

void wait_until_landed(stream_log& log, std::span<const uint32_t> ids) {
  for (uint32_t id : ids) log.wait_finished(id);
  uint64_t last = 0;
  for (uint32_t id : ids) last = std::max(last, log[id].last_land_ps);
  if (last > now_ps()) sc_core::wait(ps(last - now_ps()));
}

}  // namespace p2psim::transport
