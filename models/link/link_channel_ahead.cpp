// A link_channel's lookahead (models/transport/lookahead.h): starting a TLP ahead of time
// when nothing can change when it starts, the promises its receiver's owner relies on, and
// when the serializer next has a chance to start one.
#include <algorithm>

#include "models/link/link_channel.h"
#include "models/transport/pcie_port.h"
#include "models/transport/sim_clock.h"
#include "models/transport/tlp_txn.h"

namespace p2psim::link {

// Starts the oldest queued TLP now, at the time it will start, if that is already certain:
// when the serializer is busy (or idle, but the TLP still in its sender's pipeline), it
// starts at `at`, the later of the serializer freeing and the TLP being ready, provided it
// has its credits by the time the serializer frees, no other queued TLP is ready before
// `at`, and (if `at` is past the serializer freeing) the sender says it will hand over none
// that is. Nothing else can change that: no start happens while the serializer is busy (at
// burst fidelity, none is started ahead while a burst's gaps may still take one), a
// TLP handed over later is younger (the arbiter takes the oldest eligible head first), and
// credits only come back. The channel then need not wake for it. Not with a choice source:
// there, which of several eligible TLPs goes is decided when it goes.
bool link_channel::start_ahead(uint64_t now) {
  if (!m_sender || m_order.choices) return false;
  const int oldest = oldest_class();
  if (oldest < 0) return false;
  const entry& e = m_queue[oldest].front();
  const uint64_t free = std::max(m_busy_until, now);
  const uint64_t at = std::max(free, e.ready_ps);
  if (at == now) return false;  // startable now: pick() decides (credits or order held it)
  if (at > free)                // the serializer idles until `at`: nothing else may be ready sooner
    for (int c = 0; c < pcie::fc_class_count; ++c)
      if (c != oldest && !m_queue[c].empty() && m_queue[c].front().ready_ps < at) return false;
  m_credits.advance(free);  // no start decision comes before `free`: returns up to it count
  if (!may_start(e, oldest)) return false;
  if (at > free) {
    if (!m_sender->owner_promises_ready_no_sooner_than(at, transport::promise_scope::all))
      return false;
    m_promised_ps = std::max(m_promised_ps, at);
  }
  start(take(oldest, 0), at, now);
  return true;
}

bool link_channel::promises_arrival_no_sooner_than(uint64_t t,
                                                   transport::promise_scope which) const {
  const uint64_t now = transport::now_ps(), latency = m_timing.latency_ps;
  // Only the queues the promise is about: every class, or the completions alone.
  const bool all = which == transport::promise_scope::all;
  const int first = all ? 0 : int(pcie::fc_class::completion);
  const int last = all ? pcie::fc_class_count - 1 : first;
  for (int c = first; c <= last; ++c)
    for (const entry& e : m_queue[c])
      if (std::max(e.ready_ps, now) + latency < t) return false;
  if (t <= now + latency) return true;  // what is still to be handed over starts now or later
  return m_sender && m_sender->owner_promises_ready_no_sooner_than(t - latency, which);
}

int link_channel::oldest_class() const {
  int oldest = -1;
  for (int c = 0; c < pcie::fc_class_count; ++c)
    if (!m_queue[c].empty() && (oldest < 0 || m_queue[c].front().seq < m_queue[oldest].front().seq))
      oldest = c;
  return oldest;
}

// The serializer is busy: the earliest time a queued TLP could start, as far as is known
// now (no_wake: none before more credits come back). Waking any earlier would find nothing
// to do; a TLP or credit return that comes in meanwhile pumps again and may bring the wake
// forward.
uint64_t link_channel::next_chance() {
  const uint64_t free = m_busy_until;
  if (m_order.choices) return free;
  m_credits.advance(free);  // no start decision comes before `free`
  uint64_t t = no_wake;
  for (int c = 0; c < pcie::fc_class_count; ++c) {
    if (m_queue[c].empty()) continue;
    const entry& e = m_queue[c].front();
    if (e.ready_ps > free)
      t = std::min(t, e.ready_ps);
    else if (may_start(e, c))
      return free;
    else if (uint64_t r = m_credits.next_return())
      t = std::min(t, r);
  }
  return t;
}

}  // namespace p2psim::link
