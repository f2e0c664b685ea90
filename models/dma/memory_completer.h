// Answers memory requests that hit a backing store: posted writes are stored and their
// buffer freed when the store's data path has absorbed them; reads are answered with
// completions after the access latency. Used by host memory, GPU VRAM behind BAR1 and a DMA
// device's on-board memory.
#pragma once

#include <cstdint>
#include <systemc>
#include <tlm>

#include "models/link/pcie_port.h"
#include "models/link/stream_log.h"
#include "models/memory/backing_store.h"
#include "models/memory/throughput.h"

namespace p2psim::dma {

struct memory_timing {
  double latency_ns = 100;   // request in to first completion out
  double bandwidth_gbs = 0;  // data path; 0 = unlimited
  uint32_t cpl_bytes = 256;  // completion size (MPS, or 64 for RCB-split completers)
  uint32_t rcb = 64;
};

class memory_completer {
 public:
  memory_completer(memory::backing_store& store, const memory_timing& t, uint16_t completer_id,
                   link::stream_log& log)
      : m_store(store), m_timing(t), m_path(t.bandwidth_gbs), m_id(completer_id), m_log(log) {}

  // Stores the MWr's payload at `offset`; returns when the data path has absorbed it, as a
  // delay from now (when the caller frees the TLP's buffer).
  sc_core::sc_time write(tlm::tlm_generic_payload& gp, uint64_t offset);
  // Sends the completions for MRd `gp` reading from `offset` through `port`, `extra` later.
  void read(link::pcie_port& port, tlm::tlm_generic_payload& gp, uint64_t offset,
            const sc_core::sc_time& extra = sc_core::SC_ZERO_TIME);
  void set_completer_id(uint16_t id) { m_id = id; }

 private:
  memory::backing_store& m_store;
  memory_timing m_timing;
  memory::throughput m_path;
  uint16_t m_id;
  link::stream_log& m_log;
};

}  // namespace p2psim::dma
