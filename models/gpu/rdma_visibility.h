// What a GPU kernel sees of GPUDirect RDMA writes (GPUDirect RDMA 13.3, 5.7). A write landing
// through BAR1 is in VRAM at once, so BAR1 reads and CUDA copies issued after it see it; a
// kernel running concurrently may see stale data, part of the write, or writes out of order,
// until a CPU-initiated CUDA work submission or synchronization. CUDA 11.3+ narrows this with
// CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING (the consumers that see the writes in
// order without help) and cuFlushGPUDirectRDMAWrites (make them visible to a scope).
//
// Pending writes are kept per 32-byte L2 sector, so a kernel can see one sector of a write and
// not the next. Whether a kernel sees a pending sector is a choice (models/pcie/choices.h),
// made the first time a kernel of that consumer reads it (by the fabric's choice source, which
// the GPU passes in); without a choice source it sees it.
// Pure logic: the GPU model reports landings, the CUDA model syncs and flushes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "models/gpu/gpu_spec.h"
#include "models/memory/backing_store.h"
#include "models/pcie/choices.h"
#include "models/pcie/ordering.h"

namespace p2psim::gpu {

// A kernel on the GPU owning the memory, or on another GPU reading it (peer access).
enum class consumer { owner, peer };

class rdma_visibility {
 public:
  static constexpr uint64_t sector_bytes = 32;

  // `choices`: who decides whether a kernel sees a pending sector yet (not owned; nullptr:
  // it does).
  rdma_visibility(memory::backing_store& vram, writes_ordering o,
                  pcie::choice_source* choices = nullptr);
  void set_choices(pcie::choice_source* choices) { m_choices = choices; }
  // The rules in force (not owned; nullptr: all of them): a litmus mutation turns one of
  // GPU:writes-ordering, GPU:cpu-sync, GPU:flush off.
  void set_rules(const pcie::ordering_rules* rules) { m_rules = rules; }
  writes_ordering ordering() const { return m_ordering; }
  // Whether any kernel may read this GPU's memory while RDMA writes land. Until one is
  // declared (a litmus test's kernel agents do), nothing could see a stale byte, so landings
  // keep no records: ordinary runs pay neither memory nor time for the model.
  void set_kernels_observe(bool on) { m_observed = on; }
  bool kernels_observe() const { return m_observed; }

  // A BAR1 write is about to land at VRAM `offset` with bytes `data`: records what the bytes
  // held before (read from vram) as pending for the consumers the ordering attribute does not
  // cover. The caller stores the data into VRAM itself afterwards.
  void landing(uint64_t offset, std::span<const uint8_t> data);
  // What a kernel (consumer c) reads at [offset, offset + out.size()): VRAM, except bytes of
  // writes still pending for c.
  void kernel_read(uint64_t offset, std::span<uint8_t> out, consumer c);
  // A kernel's own store: writes VRAM and drops the pending records it covers.
  void kernel_write(uint64_t offset, std::span<const uint8_t> data);
  // A CPU-initiated CUDA work submission or synchronization on this GPU (guide 5.7): every
  // write landed so far becomes visible to every consumer.
  void cpu_sync();
  // cuFlushGPUDirectRDMAWrites: writes landed so far become visible within `scope` (owner:
  // owner consumers; all_devices: all; none covers nobody).
  void flush(writes_ordering scope);
  // Records still pending for some consumer: one per sector and write, where writes landing
  // in a sector with no kernel read between them count as one.
  size_t pending() const { return m_pending; }

  struct stats_t {
    uint64_t landed_pending = 0;  // landings that left something pending
    uint64_t stale_reads = 0;     // kernel reads that returned a byte differing from VRAM
    uint64_t syncs = 0, flushes = 0;
  };
  const stats_t& stats() const { return m_stats; }

 private:
  // For one consumer: not pending (covered by the ordering attribute, flushed, or decided
  // visible), not yet decided, or decided not yet visible.
  enum class sight : uint8_t { visible, undecided, hidden };
  // A write's bytes in one sector. What it wrote is not kept: it is the next newer record's
  // before-image, or VRAM for the newest, which halves what a sector costs.
  struct record {
    uint32_t mask = 0;  // the sector's bytes this write covers (bit i: byte i)
    std::array<uint8_t, sector_bytes> before{};
    std::array<sight, 2> seen{};  // by consumer
  };
  using sector = std::vector<record>;  // in landing order
  using sector_map = std::map<uint64_t, sector>;

  void decide(sector& s, consumer c);
  // Drops what no longer matters to any read in the sector; the sector's successor.
  sector_map::iterator settle(sector_map::iterator it);

  memory::backing_store& m_vram;
  writes_ordering m_ordering;
  pcie::choice_source* m_choices;
  const pcie::ordering_rules* m_rules = nullptr;
  bool in_force(pcie::order_rule r) const { return !m_rules || m_rules->enabled(r); }
  bool m_observed = false;
  sector_map m_sectors;  // by sector index; no empty sectors
  size_t m_pending = 0;
  stats_t m_stats;
};

}  // namespace p2psim::gpu
