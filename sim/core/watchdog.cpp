#include "sim/core/watchdog.h"

#include <fmt/format.h>

#include "models/transport/activity.h"

namespace p2psim::core {

namespace {
// Delta cycles at one instant beyond which standing still is a loop, not a busy instant:
// a real instant of the fabric takes a handful.
constexpr uint64_t loop_deltas = 100'000;
}  // namespace

watchdog::watchdog(std::chrono::duration<double> limit)
    : sc_prim_channel(sc_core::sc_gen_unique_name("watchdog")),
      m_limit(limit),
      m_since(std::chrono::steady_clock::now()) {
  if (m_limit.count() > 0) m_thread = std::thread([this] { poll(); });
}

watchdog::~watchdog() {
  if (!m_thread.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_stop = true;
  }
  m_stop_cv.notify_all();
  m_thread.join();
}

void watchdog::poll() {
  const auto period = std::chrono::duration_cast<std::chrono::steady_clock::duration>(m_limit / 4);
  std::unique_lock<std::mutex> lock(m_mutex);
  while (!m_stop_cv.wait_for(lock, period, [this] { return m_stop; })) async_request_update();
}

void watchdog::update() {
  const auto now = std::chrono::steady_clock::now();
  const sc_core::sc_time t = sc_core::sc_time_stamp();
  const uint64_t deltas = sc_core::sc_delta_count();
  if (t != m_time) {  // time moved: count delta cycles from here
    m_time = t;
    m_deltas = deltas;
  }
  if (deltas - m_deltas < loop_deltas) {  // not (yet) a loop
    m_since = now;
    return;
  }
  if (now - m_since < m_limit || !m_verdict.empty()) return;
  const sc_core::sc_object* module = transport::last_active();
  m_verdict = fmt::format(
      "simulated time stopped advancing at {:.3f} us: {} delta cycles in {:.0f} s of wall time "
      "without it moving (a loop in zero time); the module running last was {}",
      t.to_seconds() * 1e6, deltas - m_deltas, std::chrono::duration<double>(now - m_since).count(),
      module ? module->name() : "(none of the fabric's)");
  sc_core::sc_stop();
}

}  // namespace p2psim::core
