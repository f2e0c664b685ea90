// Ends a run whose simulated time has stopped advancing while the kernel keeps running delta
// cycles (a model that loops in zero time), naming the module that kept running. A thread
// wakes every so often and asks the kernel, through a thread-safe update request, to look
// at its clock; the look itself happens in the simulation thread. Long host work inside one
// process (filling a large buffer, say) is not a stall: it spends no delta cycles.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include <systemc>

namespace p2psim::core {

class watchdog : public sc_core::sc_prim_channel {
 public:
  // `limit`: wall time simulated time may stand still (with delta cycles going on) before
  // the run is stopped; zero turns the watchdog off.
  explicit watchdog(std::chrono::duration<double> limit);
  ~watchdog() override;
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;
  // Empty unless the watchdog stopped the run; then what it saw.
  const std::string& verdict() const { return m_verdict; }

 private:
  void update() override;  // in the simulation thread
  void poll();             // the watchdog's own thread

  std::chrono::duration<double> m_limit;
  std::thread m_thread;
  std::mutex m_mutex;
  std::condition_variable m_stop_cv;
  bool m_stop = false;
  // The simulation thread's view: the clock and delta count when time last moved.
  sc_core::sc_time m_time;
  uint64_t m_deltas = 0;
  std::chrono::steady_clock::time_point m_since;
  std::string m_verdict;
};

}  // namespace p2psim::core
