// A third-party DMA device (NIC- or FPGA-like): BAR0 registers, optional on-board memory in
// BAR2 that peers can read and write, and a descriptor-driven scatter-gather engine that
// moves data between its local memory and a list of bus addresses. A descriptor list takes
// `descriptor_latency` (fetch and parse) before its first TLP.
#pragma once

#include <deque>
#include <systemc>

#include "models/dma/dma_initiator.h"
#include "models/dma/dma_requester.h"
#include "models/dma/memory_completer.h"
#include "models/dma_engine/engine_spec.h"
#include "models/memory/backing_store.h"
#include "models/pcie/window.h"
#include "models/stats/stat.h"
#include "models/transport/pcie_port.h"
#include "models/transport/stream_log.h"

namespace p2psim::dma_engine {

// The declared settings and what elaboration decides.
struct engine_params : engine_spec {
  uint16_t bdf = 0;
  pcie::window bar0, bar2;          // bar2: on-board memory (local memory [0, bar2.size))
  dma::memory_timing local;         // serving peers' accesses to BAR2
  dma::requester_params requester;  // MPS, MRRS, tags
};

struct engine_stats {
  uint64_t jobs = 0;
  uint64_t bar2_writes = 0, bar2_reads = 0, bar0_accesses = 0, unsupported_requests = 0;
};

inline const stats::table<engine_stats>& engine_stat_table() {
  using stats::unit;
  static const stats::table<engine_stats> t{
      stats::counter("jobs", &engine_stats::jobs, unit::count, "DMA descriptors processed."),
      stats::counter("bar2_writes", &engine_stats::bar2_writes, unit::tlps,
                     "Peer writes into the on-board memory."),
      stats::counter("bar2_reads", &engine_stats::bar2_reads, unit::tlps,
                     "Peer read requests of the on-board memory."),
      stats::counter("bar0_accesses", &engine_stats::bar0_accesses, unit::tlps,
                     "Register accesses."),
      stats::counter("unsupported_requests", &engine_stats::unsupported_requests, unit::tlps,
                     "Requests that hit no BAR: Unsupported Request."),
  };
  return t;
}

class dma_engine : public sc_core::sc_module,
                   public transport::tlp_handler,
                   public dma::dma_initiator {
 public:
  transport::pcie_port port;

  // `pool`: the simulation's, which the engine's TLPs come from.
  dma_engine(sc_core::sc_module_name name, const engine_params& p, transport::tlp_pool& pool,
             transport::stream_log& log);
  // Queues a descriptor list; it starts after the descriptor latency.
  void submit(dma::dma_job job) override;
  memory::backing_store& local_memory() override { return m_local; }
  const dma::dma_requester& requester() const override { return m_req; }
  // Its memory (memory_completer) stores and frees a burst of writes as it comes in.
  bool takes_write_bursts_as_they_come() const override { return true; }
  uint64_t completion_burst_wait_ps(int, const tlm::tlm_generic_payload& gp) const override {
    return m_req.completion_burst_wait_ps(gp);
  }
  const engine_params& params() const { return m_params; }
  const engine_stats& stats() const { return m_stats; }

  void receive(int port, tlm::tlm_generic_payload& gp) override;
  void sent(int port, tlm::tlm_generic_payload& gp, uint64_t after_ps) override;

 private:
  void start_due();

  engine_params m_params;
  transport::stream_log& m_log;
  memory::backing_store m_local;
  memory::backing_store m_regs;
  dma::memory_completer m_local_port;
  dma::memory_completer m_reg_port;
  dma::dma_requester m_req;
  std::deque<std::pair<uint64_t, dma::dma_job>> m_pending;  // (start time ps, job)
  sc_core::sc_event m_due;
  engine_stats m_stats;
};

}  // namespace p2psim::dma_engine
