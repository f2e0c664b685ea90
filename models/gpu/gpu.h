// An NVIDIA-like GPU endpoint: BAR0 (registers), BAR1 (an aperture mapped onto VRAM in 64 KiB
// pages through the BAR1 page table, with a driver-reserved region), VRAM holding real bytes,
// and a copy engine that DMAs between VRAM and the bus (host memory or a peer's BAR). What
// kernels see of BAR1 writes is the rdma_visibility model's (guide 5.7).
#pragma once

#include <memory>
#include <string>
#include <systemc>

#include "models/dma/dma_initiator.h"
#include "models/dma/dma_requester.h"
#include "models/dma/memory_completer.h"
#include "models/gpu/bar1_page_table.h"
#include "models/gpu/rdma_visibility.h"
#include "models/memory/backing_store.h"
#include "models/pcie/order_policy.h"
#include "models/pcie/window.h"
#include "models/stats/stat.h"
#include "models/transport/pcie_port.h"
#include "models/transport/stream_log.h"

namespace p2psim::gpu {

// The declared settings and what elaboration decides.
struct gpu_params : gpu_spec {
  uint16_t bdf = 0;
  pcie::window bar0, bar1;
  uint32_t cpl_bytes = 256, rcb = 64;  // BAR1 read completions: the GPU's MPS and RCB
  dma::requester_params copy;          // the copy engine's MPS, MRRS, tags
  dma::memory_timing vram() const { return {vram_latency_ns, vram_bandwidth_gbs, cpl_bytes, rcb}; }
};

struct gpu_stats {
  uint64_t bar1_writes = 0, bar1_reads = 0;
  uint64_t bar1_unmapped_accesses = 0;  // accesses to unmapped BAR1 pages: refused
  uint64_t bar0_accesses = 0;
  uint64_t unsupported_requests = 0;  // requests that hit no BAR
};

// The counters; the VRAM allocated is reported beside them (stats_dump).
inline const stats::table<gpu_stats>& gpu_stat_table() {
  using stats::unit;
  static const stats::table<gpu_stats> t{
      stats::counter("bar1_writes", &gpu_stats::bar1_writes, unit::tlps,
                     "Peer writes into VRAM through BAR1."),
      stats::counter("bar1_reads", &gpu_stats::bar1_reads, unit::tlps,
                     "Peer read requests through BAR1."),
      stats::counter("bar1_unmapped_accesses", &gpu_stats::bar1_unmapped_accesses, unit::tlps,
                     "Accesses to BAR1 pages nothing is mapped at: refused."),
      stats::counter("bar0_accesses", &gpu_stats::bar0_accesses, unit::tlps, "Register accesses."),
      stats::counter("unsupported_requests", &gpu_stats::unsupported_requests, unit::tlps,
                     "Requests that hit no BAR: Unsupported Request."),
  };
  return t;
}

class gpu : public sc_core::sc_module, public transport::tlp_handler, public dma::dma_initiator {
 public:
  transport::pcie_port port;

  // `pool`: the simulation's, which the copy engine's TLPs come from. `order`: the fabric's;
  // its choice source decides what kernels see of RDMA writes.
  gpu(sc_core::sc_module_name name, const gpu_params& p, transport::tlp_pool& pool,
      transport::stream_log& log, const pcie::order_policy& order);
  const gpu_params& params() const { return m_params; }
  memory::backing_store& vram() { return m_vram; }
  const memory::backing_store& vram() const { return m_vram; }
  bar1_page_table& bar1() { return m_bar1; }
  rdma_visibility& visibility() { return m_visibility; }
  dma::dma_requester& copy_engine() { return m_copy; }
  // As a DMA initiator: its copy engine, between VRAM and the bus.
  memory::backing_store& local_memory() override { return m_vram; }
  void submit(dma::dma_job job) override { m_copy.submit(std::move(job)); }
  const dma::dma_requester& requester() const override { return m_copy; }
  // Its memory (memory_completer) stores and frees a burst of writes as it comes in.
  bool takes_write_bursts_as_they_come() const override { return true; }
  uint64_t completion_burst_wait_ps(int, const tlm::tlm_generic_payload& gp) const override {
    return m_copy.completion_burst_wait_ps(gp);
  }
  const gpu_stats& stats() const { return m_stats; }

  void receive(int port, tlm::tlm_generic_payload& gp) override;
  void sent(int port, tlm::tlm_generic_payload& gp, uint64_t after_ps) override;

 private:
  void request(tlm::tlm_generic_payload& gp);
  void refuse(tlm::tlm_generic_payload& gp, pcie::cpl_status status);

  gpu_params m_params;
  transport::stream_log& m_log;
  memory::backing_store m_vram;
  rdma_visibility m_visibility;  // over m_vram
  memory::backing_store m_regs;
  bar1_page_table m_bar1;
  dma::memory_completer m_vram_port;
  dma::memory_completer m_reg_port;
  dma::dma_requester m_copy;
  gpu_stats m_stats;
};

}  // namespace p2psim::gpu
