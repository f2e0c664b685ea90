// Answers memory requests that hit a backing store: posted writes are stored and their
// buffer freed when the store's data path has absorbed them; reads are answered with
// completions after the access latency; AtomicOps change the target at once (nothing comes
// between their read and their write) and answer with the old value. Used by host memory, GPU VRAM
// behind BAR1 and a DMA device's on-board memory.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <systemc>
#include <tlm>
#include <vector>

#include "models/dma/memory_timing.h"
#include "models/memory/backing_store.h"
#include "models/memory/data_path.h"
#include "models/pcie/atomic_op.h"
#include "models/pcie/time_units.h"
#include "models/transport/pcie_port.h"
#include "models/transport/stream_log.h"

namespace p2psim::dma {

class memory_completer {
 public:
  memory_completer(memory::backing_store& store, const memory_timing& t, uint16_t completer_id,
                   transport::stream_log& log)
      : m_store(store), m_timing(t), m_path(t.bandwidth_gbs), m_id(completer_id), m_log(log) {}

  // Stores the MWr's payload at `offset`; returns when the data path has absorbed it, as a
  // delay from now (when the caller frees the TLP's buffer). The bytes count as stored
  // `extra` after that (the stream log's landing time).
  sc_core::sc_time write(tlm::tlm_generic_payload& gp, uint64_t offset,
                         const sc_core::sc_time& extra = sc_core::SC_ZERO_TIME);
  // Sends the completions for MRd `gp` reading from `offset` through `port`, `extra` later,
  // each at most `max_payload` bytes (the requester's MPS; 0: the completion size alone).
  void read(transport::pcie_port& port, tlm::tlm_generic_payload& gp, uint64_t offset,
            const sc_core::sc_time& extra = sc_core::SC_ZERO_TIME, uint32_t max_payload = 0);
  // Performs AtomicOp `gp` on the store at `offset` and sends its CplD, `extra` later.
  void atomic(transport::pcie_port& port, tlm::tlm_generic_payload& gp, uint64_t offset,
              const sc_core::sc_time& extra = sc_core::SC_ZERO_TIME);
  // Any request: stores, answers or both, `extra` later. Returns when the caller may free the
  // TLP's buffer (after a write: when the data path has absorbed it), as a delay from now.
  sc_core::sc_time serve(transport::pcie_port& port, tlm::tlm_generic_payload& gp, uint64_t offset,
                         const sc_core::sc_time& extra = sc_core::SC_ZERO_TIME,
                         uint32_t max_payload = 0);
  void set_completer_id(uint16_t id) { m_id = id; }
  // Called with the new bytes before a write or an AtomicOp changes the store (the GPU keeps
  // what its kernels may still see).
  using store_hook = std::function<void(uint64_t offset, std::span<const uint8_t> data)>;
  void on_store(store_hook hook) { m_on_store = std::move(hook); }
  // Where a read request's data comes from instead of the store (a mutation of the GPU's read
  // back, litmus only); TLP by TLP, not for bursts that share the store's chunks.
  using load_hook = std::function<void(uint64_t offset, std::span<uint8_t> out)>;
  void on_load(load_hook hook) { m_on_load = std::move(hook); }

 private:
  uint64_t latency_ps() const { return pcie::ns_to_ps(m_timing.latency_ns); }
  // Burst fidelity: a read burst's requests come in over its lag, and TLP by TLP each takes
  // the data path from its arrival plus the access latency on. A read or AtomicOp that
  // comes in at `arrival_ps` takes it after those that came in before it: no sooner than
  // this (0: after no burst's). (A write takes the path as it comes in, before the
  // latency of any read is over.)
  uint64_t after_read_bursts(uint64_t arrival_ps) const;
  // Books read `gp`, come in at `now`, on the data path; returns when its last byte is read,
  // and sets `first_done` to when its first request's is for a burst booked request by
  // request (0 if booked whole).
  uint64_t book_read(const tlm::tlm_generic_payload& gp, uint64_t now, uint64_t& first_done);
  struct read_burst_arrivals {
    uint64_t first = 0, last = 0;  // when its first and last requests came in (evenly)
    uint32_t requests = 0;
    uint64_t hold = 0;  // how long after its arrival a request's data leaves the path (0: none)
  };
  read_burst_arrivals m_read_bursts[2];  // the last two, the newest first

  memory::backing_store& m_store;
  memory_timing m_timing;
  memory::data_path m_path;
  uint16_t m_id;
  transport::stream_log& m_log;
  store_hook m_on_store;
  load_hook m_on_load;
};

}  // namespace p2psim::dma
