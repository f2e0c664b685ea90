#include "models/tlm/stream_log.h"

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
  r.last_land_ps = now;
  if (!was && r.finished()) m_finished.notify(sc_core::SC_ZERO_TIME);
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

}  // namespace p2psim::transport
