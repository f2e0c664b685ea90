// The way requests for host memory go into it, in a root complex that may commit writes with
// Relaxed Ordering out of order (platform `root_complex.reorders_relaxed_writes`; PCIe Base
// 2.4.1, table 2-40 P-P b: a posted request with RO set may pass an earlier one). Inside the
// root complex the table holds as it does in a queue: a write with RO set may be committed
// before the writes that came in before it; one without RO, a read or an AtomicOp may not
// pass them, so they are committed first (a read or AtomicOp with IDO set passes those of
// other requesters, 2.4.1 B2b and C2b).
//
// Which order a root complex takes is not timing anyone publishes, so it is a choice
// (models/pcie/choices.h): where a choice source decides (p2psim litmus), each write that
// comes in may be held instead of committed at once; a held write is committed before the
// first request that comes in and may not pass it, or the memory latency after it came in,
// whichever is first. With no choice source every request goes on at once, as in a root
// complex that keeps writes in order, so timed runs are the same whatever the preset says.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>

#include <systemc>
#include <tlm>

#include "models/pcie/order_policy.h"

namespace p2psim::root_complex {

class write_commit_stage : public sc_core::sc_module {
 public:
  // Takes a request from port `port` into host memory (the write is committed).
  using commit_fn = std::function<void(int port, tlm::tlm_generic_payload& gp)>;

  SC_HAS_PROCESS(write_commit_stage);
  // `reorders`: the platform's `root_complex.reorders_relaxed_writes`; `hold_ps`: the longest a
  // write is held.
  write_commit_stage(sc_core::sc_module_name name, const pcie::order_policy& order, bool reorders,
                     uint64_t hold_ps, commit_fn commit);

  // A request for host memory that came in on port `port`.
  void receive(int port, tlm::tlm_generic_payload& gp);
  size_t held() const { return m_held.size(); }

 private:
  struct held_write {
    int port;
    tlm::tlm_generic_payload* gp;
    uint64_t until_ps;
  };
  void commit_oldest(size_t n);
  void expire();  // commits the writes whose time is up

  const pcie::order_policy& m_order;
  bool m_reorders;
  uint64_t m_hold_ps;
  commit_fn m_commit;
  std::deque<held_write> m_held;  // in the order they came in
  sc_core::sc_event m_wake;
};

}  // namespace p2psim::root_complex
