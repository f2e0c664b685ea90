#include "models/dma_engine/dma_engine.h"
#include "models/transport/activity.h"

#include "models/dma/completer.h"
#include "models/pcie/time_units.h"
#include "models/transport/sim_clock.h"
#include "models/transport/tlp_txn.h"

namespace p2psim::dma_engine {

using namespace sc_core;

dma_engine::dma_engine(sc_module_name name, const engine_params& p, transport::tlp_pool& pool,
                       transport::stream_log& log)
    : sc_module(name),
      port("port", *this, 0),
      m_params(p),
      m_log(log),
      m_local(p.local_memory_bytes),
      m_regs(p.bar0.size),
      m_local_port(m_local, p.local, p.bdf, log),
      m_reg_port(m_regs, dma::memory_timing{}, p.bdf, log),
      m_req(port, pool, m_local, p.requester, log) {
  SC_HAS_PROCESS(dma_engine);
  SC_METHOD(start_due);
  sensitive << m_due;
  dont_initialize();
}

void dma_engine::submit(dma::dma_job job) {
  ++m_stats.jobs;
  uint64_t now = transport::now_ps();
  uint64_t at = now + pcie::ns_to_ps(m_params.descriptor_latency_ns);
  m_pending.emplace_back(at, std::move(job));
  m_due.notify(transport::ps(m_pending.front().first - now));
}

void dma_engine::start_due() {
  transport::note_activity(this);
  uint64_t now = transport::now_ps();
  while (!m_pending.empty() && m_pending.front().first <= now) {
    m_req.submit(std::move(m_pending.front().second));
    m_pending.pop_front();
  }
  if (!m_pending.empty()) m_due.notify(transport::ps(m_pending.front().first - now));
}

void dma_engine::receive(int, tlm::tlm_generic_payload& gp) {
  const auto& h = transport::hdr(gp);
  if (pcie::is_completion(h.type)) {
    m_req.completion(gp);
    return;
  }
  const bool write = h.type == pcie::tlp_type::mwr || pcie::is_atomic(h.type);
  dma::memory_completer* target = nullptr;
  uint64_t off = 0;
  if (m_params.bar2.contains(h.address)) {
    target = &m_local_port;
    off = h.address - m_params.bar2.base;
    ++(write ? m_stats.bar2_writes : m_stats.bar2_reads);
  } else if (m_params.bar0.contains(h.address)) {
    target = &m_reg_port;
    off = h.address - m_params.bar0.base;
    ++m_stats.bar0_accesses;
  }
  if (!target) {
    ++m_stats.unsupported_requests;
    dma::refuse_request(port, gp, m_params.bdf, pcie::cpl_status::ur, SC_ZERO_TIME, &m_log);
    return;
  }
  port.free_buffer(gp, target->serve(port, gp, off));
  gp.release();
}

// Never ahead (allows_start_ahead is false): the requester acts on the departure now.
void dma_engine::sent(int, tlm::tlm_generic_payload& gp, uint64_t) {
  const auto& h = transport::hdr(gp);
  if (!pcie::is_completion(h.type) && h.requester_id == m_params.bdf) m_req.sent(gp);
}

}  // namespace p2psim::dma_engine
