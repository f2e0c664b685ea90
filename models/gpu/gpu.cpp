#include "models/gpu/gpu.h"

#include "models/dma/completer.h"
#include "models/transport/sim_clock.h"
#include "models/transport/tlp_txn.h"

namespace p2psim::gpu {

using namespace sc_core;

namespace {
dma::memory_timing register_timing(const dma::memory_timing& t) {
  dma::memory_timing r = t;
  r.bandwidth_gbs = 0;
  return r;
}
}  // namespace

gpu::gpu(sc_module_name name, const gpu_params& p, transport::tlp_pool& pool,
         transport::stream_log& log, const pcie::order_policy& order)
    : sc_module(name),
      port("port", *this, 0),
      m_params(p),
      m_log(log),
      m_vram(p.vram_bytes),
      m_visibility(m_vram, p.rdma_ordering, order.choices),
      m_regs(p.bar0.size),
      m_bar1(p.bar1.size, p.bar1_reserved_bytes),
      m_vram_port(m_vram, p.vram(), p.bdf, log),
      m_reg_port(m_regs, register_timing(p.vram()), p.bdf, log),
      m_copy(port, pool, m_vram, p.copy, log) {
  // Before a BAR1 write or AtomicOp changes VRAM, the visibility model keeps what kernels
  // may still see.
  m_vram_port.on_store([this](uint64_t offset, std::span<const uint8_t> data) {
    m_visibility.landing(offset, data);
  });
  m_visibility.set_rules(&order.rules);  // the fabric's: it outlives the GPU
  // GPU:bar1-read-back taken out: a BAR1 read sees landed RDMA writes as a kernel on a peer GPU
  // that the ordering attribute does not cover would.
  if (!order.rules.enabled(pcie::order_rule::gpu_bar1_read_back))
    m_vram_port.on_load([this](uint64_t offset, std::span<uint8_t> out) {
      if (m_visibility.kernels_observe())
        m_visibility.kernel_read(offset, out, consumer::peer);
      else
        m_vram.read(offset, out);
    });
}

void gpu::receive(int, tlm::tlm_generic_payload& gp) {
  const auto& h = transport::hdr(gp);
  if (pcie::is_completion(h.type)) {
    m_copy.completion(gp);
    return;
  }
  request(gp);
}

void gpu::refuse(tlm::tlm_generic_payload& gp, pcie::cpl_status status) {
  dma::refuse_request(port, gp, m_params.bdf, status, SC_ZERO_TIME, &m_log);
}

void gpu::request(tlm::tlm_generic_payload& gp) {
  const auto& h = transport::hdr(gp);
  const bool write = h.type == pcie::tlp_type::mwr || pcie::is_atomic(h.type);
  if (m_params.bar1.contains(h.address)) {
    // A TLP never crosses a 4 KiB boundary, so it lies within one 64 KiB BAR1 page.
    auto vram = m_bar1.translate(h.address - m_params.bar1.base);
    if (!vram) {
      ++m_stats.bar1_unmapped_accesses;
      refuse(gp, pcie::cpl_status::ca);
      return;
    }
    ++(write ? m_stats.bar1_writes : m_stats.bar1_reads);
    port.free_buffer(gp, m_vram_port.serve(port, gp, *vram));
    gp.release();
    return;
  }
  if (m_params.bar0.contains(h.address)) {
    ++m_stats.bar0_accesses;
    uint64_t off = h.address - m_params.bar0.base;
    port.free_buffer(gp, m_reg_port.serve(port, gp, off));
    gp.release();
    return;
  }
  ++m_stats.unsupported_requests;
  refuse(gp, pcie::cpl_status::ur);
}

// Never ahead (allows_start_ahead is false): the requester acts on the departure now.
void gpu::sent(int, tlm::tlm_generic_payload& gp, uint64_t) {
  const auto& h = transport::hdr(gp);
  if (!pcie::is_completion(h.type) && h.requester_id == m_params.bdf) m_copy.sent(gp);
}

}  // namespace p2psim::gpu
