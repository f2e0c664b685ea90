#include "models/dma/memory_completer.h"

#include "models/dma/completer.h"
#include "models/link/tlp_txn.h"

namespace p2psim::dma {

sc_core::sc_time memory_completer::write(tlm::tlm_generic_payload& gp, uint64_t offset) {
  const auto& h = link::hdr(gp);
  m_store.write(offset, std::span<const uint8_t>(link::txn(gp).bytes));
  uint64_t now = link::now_ps();
  uint64_t done = m_path.serve(now, h.length);
  m_log.landed(link::meta(gp).stream, h.length, done);
  return link::ps(done - now);
}

void memory_completer::read(link::pcie_port& port, tlm::tlm_generic_payload& gp, uint64_t offset,
                            const sc_core::sc_time& extra) {
  const auto& h = link::hdr(gp);
  uint64_t now = link::now_ps();
  uint64_t latency = uint64_t(m_timing.latency_ns * 1000 + 0.5);
  // The access latency, then the request's bytes through the data path: its completions
  // leave once the data is read (they then serialize on the link one after another).
  uint64_t done = m_path.serve(now + latency, h.length);
  sc_core::sc_time when = link::ps(done - now) + extra;
  const uint64_t base = h.address;
  send_completions(
      port, h, link::meta(gp).stream, m_id, m_timing.cpl_bytes, m_timing.rcb, when,
      [&](uint64_t addr, std::span<uint8_t> out) { m_store.read(offset + (addr - base), out); });
}

}  // namespace p2psim::dma
