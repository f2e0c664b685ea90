#include "models/root_complex/write_commit_stage.h"

#include "models/transport/sim_clock.h"
#include "models/transport/tlp_txn.h"

namespace p2psim::root_complex {

using namespace sc_core;

write_commit_stage::write_commit_stage(sc_module_name name, const pcie::order_policy& order,
                                       bool reorders, uint64_t hold_ps, commit_fn commit)
    : sc_module(name),
      m_order(order),
      m_reorders(reorders),
      m_hold_ps(hold_ps),
      m_commit(std::move(commit)) {
  SC_METHOD(expire);
  sensitive << m_wake;
  dont_initialize();
}

void write_commit_stage::receive(int port, tlm::tlm_generic_payload& gp) {
  const auto& h = transport::hdr(gp);
  // Up to the youngest held write it may not pass, the held writes go first.
  size_t before = 0;
  for (size_t i = 0; i < m_held.size(); ++i)
    if (m_order.rules.may_pass(h, transport::hdr(*m_held[i].gp)) == pcie::passing::no)
      before = i + 1;
  commit_oldest(before);
  if (m_reorders && m_order.choices && h.type == pcie::tlp_type::mwr &&
      m_order.choices->pick(2) == 1) {
    const uint64_t now = transport::now_ps();
    m_held.push_back({port, &gp, now + m_hold_ps});
    if (m_held.size() == 1) m_wake.notify(transport::ps(m_hold_ps));
    return;
  }
  m_commit(port, gp);
}

void write_commit_stage::commit_oldest(size_t n) {
  for (; n > 0; --n) {
    held_write w = m_held.front();
    m_held.pop_front();
    m_commit(w.port, *w.gp);
  }
}

// Every write is held as long, so the oldest is the first whose time is up.
void write_commit_stage::expire() {
  const uint64_t now = transport::now_ps();
  size_t due = 0;
  while (due < m_held.size() && m_held[due].until_ps <= now) ++due;
  commit_oldest(due);
  if (!m_held.empty()) m_wake.notify(transport::ps(m_held.front().until_ps - now));
}

}  // namespace p2psim::root_complex
