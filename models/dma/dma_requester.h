// The request side of a DMA engine, shared by the third-party DMA device and the GPU's copy
// engines: scatter-gather jobs cut into TLPs (writes at MPS and 4 KiB boundaries, read
// requests at MRRS and 4 KiB), reads bounded by the tag pool, completions reassembled into
// local memory. Several jobs run at once and take turns TLP by TLP.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <optional>
#include <vector>

#include <systemc>

#include "models/dma/command_pipes.h"
#include "models/memory/backing_store.h"
#include "models/pcie/split.h"
#include "models/pcie/tag_pool.h"
#include "models/pcie/tlp.h"
#include "models/stats/stat.h"
#include "models/transport/pcie_port.h"
#include "models/transport/stream_log.h"
#include "models/transport/tlp_txn.h"

namespace p2psim::dma {

struct dma_segment {
  uint64_t bus_address = 0;  // where on the bus (a BAR, host memory, an IOVA)
  uint64_t length = 0;
  uint64_t local_offset = 0;  // where in the engine's local memory
};

struct dma_job {
  bool write = true;  // true: local -> bus (MWr); false: bus -> local (MRd)
  // An AtomicOp (FetchAdd, Swap, CAS) instead: one segment of 4 or 8 bytes (CAS: 8 or 16),
  // naturally aligned; the operand is read from local_offset and the old value returned
  // there. `write` is ignored.
  std::optional<pcie::tlp_type> atomic;
  std::vector<dma_segment> segments;
  pcie::tlp_attrs attrs;
  uint32_t stream = 0;  // stream_log id
  // Issue no TLP before every job submitted earlier has issued all of its own (a device
  // working through its descriptors in program order, as litmus agents do); otherwise jobs
  // take turns TLP by TLP.
  bool in_order = false;
};

struct requester_params {
  uint16_t bdf = 0;
  uint32_t mps = 256;
  uint32_t mrrs = 512;
  uint32_t tags = 256;
  // Burst fidelity: the most bytes one transaction carries (a power of two; bursts never
  // cross a multiple of it, so keep it within the pages the path translates: 64 KiB BAR1
  // pages, 4 KiB behind a translating IOMMU). 0: TLP fidelity.
  uint32_t burst_bytes = 0;
  // A read whose completions have not all come this long after it was issued is given up
  // (PCIe Base Spec 6.2.8.2: Completion Timeout; the default range is 50 us to 50 ms).
  uint64_t completion_timeout_ps = 50'000'000'000;
  // Moving read data into local memory (command_pipes.h): commands of at most command_bytes
  // (0: a stream's data is one command), each at command_bytes_per_ns (0: as it arrives).
  uint64_t command_bytes = 0;
  double command_bytes_per_ns = 0;
};

struct requester_stats {
  uint64_t write_tlps = 0, read_requests = 0, atomics = 0, completions = 0, error_completions = 0;
  uint64_t tag_stalls = 0;              // a read waited for a free tag
  uint64_t completion_timeouts = 0;     // reads given up: their completions never came
  uint64_t unexpected_completions = 0;  // for a tag not waiting (after its timeout)
  uint32_t max_tags_in_use = 0;
  // The shortest time from a read request leaving to its data back (at burst fidelity, a read
  // burst's first request to its completions' coming in); 0: no read finished.
  uint64_t min_read_round_trip_ps = 0;
  // Burst fidelity: jobs that issued their last TLP while another job of this requester still
  // took turns with them, with fewer than short_turns_tlps TLPs of the requester's from their
  // first to their last (where their ends are least sure: dma_requester::issue).
  uint64_t short_jobs_ended_in_turns = 0;
};

// A job's end, where jobs of one requester take turns, is as sure as the lead the first of
// them keeps: up to 2 of the requester's TLPs apart between the fidelities, 1% of a job that
// spans 200 of them (docs/architecture.md, "Burst fidelity", "Ramps").
inline constexpr uint64_t short_turns_tlps = 200;

inline const stats::table<requester_stats>& requester_stat_table() {
  using stats::unit;
  static const stats::table<requester_stats> t{
      stats::counter("write_tlps", &requester_stats::write_tlps, unit::tlps, "Writes issued."),
      stats::counter("read_requests", &requester_stats::read_requests, unit::tlps,
                     "Read requests issued."),
      stats::counter("completions", &requester_stats::completions, unit::tlps,
                     "Completions received for them."),
      stats::counter("error_completions", &requester_stats::error_completions, unit::tlps,
                     "Of those, Unsupported Request or Completer Abort."),
      stats::counter("tag_stalls", &requester_stats::tag_stalls, unit::count,
                     "Times a read waited for a free tag."),
      stats::counter("max_tags_in_use", &requester_stats::max_tags_in_use, unit::count,
                     "Most reads outstanding at once."),
      stats::counter("min_read_round_trip_ps", &requester_stats::min_read_round_trip_ps,
                     unit::picoseconds,
                     "Shortest read round trip: a request out to its data in (0: none)."),
      stats::counter("completion_timeouts", &requester_stats::completion_timeouts, unit::count,
                     "Reads given up because their completions never came (PCIe Base Spec "
                     "6.2.8.2)."),
      stats::counter("unexpected_completions", &requester_stats::unexpected_completions, unit::tlps,
                     "Completions for a tag not waiting (after its timeout)."),
      stats::counter("short_jobs_ended_in_turns", &requester_stats::short_jobs_ended_in_turns,
                     unit::count,
                     "Burst fidelity: jobs that issued their last TLP while another job of the "
                     "requester still took turns with them, fewer than 200 of the requester's "
                     "TLPs after their first (their ends may differ from TLP fidelity's by up "
                     "to 2 of those TLPs)."),
  };
  return t;
}

class dma_requester {
 public:
  // `pool`: the simulation's, which its TLPs come from.
  dma_requester(transport::pcie_port& port, transport::tlp_pool& pool, memory::backing_store& local,
                const requester_params& p, transport::stream_log& log);
  void submit(dma_job job);
  bool idle() const { return m_active.empty() && m_tags.in_use() == 0; }
  // Whether every TLP of stream `id` has been handed to the link (a posted write is then
  // complete as far as the requester is concerned: later TLPs queue behind it).
  bool issued(uint32_t stream) const;
  const requester_stats& stats() const { return m_stats; }
  const requester_params& params() const { return m_params; }

  // Called by the owning component's tlp_handler.
  void sent(tlm::tlm_generic_payload& gp);
  // A Cpl/CplD addressed to this requester: its data is stored, and the TLP's buffer freed
  // and its reference dropped (the requester is its last holder).
  void completion(tlm::tlm_generic_payload& gp);
  // Burst fidelity: how long after the first TLP of completion burst `gp` comes in the tags of
  // the requests it ends are free again (tlp_handler::completion_burst_wait_ps).
  uint64_t completion_burst_wait_ps(const tlm::tlm_generic_payload& gp) const;

 private:
  static constexpr uint64_t no_tlp = UINT64_MAX;
  struct active_job {
    dma_job job;
    size_t segment = 0;
    pcie::request_splitter split;
    uint64_t segment_done = 0;    // bytes of the current segment already issued
    uint64_t seq = 0;             // submission order
    uint32_t burst_bytes = 0;     // burst fidelity: this job's burst size (0: TLP by TLP)
    uint32_t bursts = 0;          // burst fidelity: bursts issued so far
    uint32_t last_tlps = 0;       // burst fidelity: TLPs of the last one
    uint64_t left = 0;            // bytes still to issue, every segment
    uint64_t first_tlp = no_tlp;  // the requester's TLP count when it issued its first
  };
  struct read_slot {
    uint32_t stream = 0;
    uint64_t address = 0;       // next byte expected
    uint64_t local_offset = 0;  // where that byte goes
    uint32_t remaining = 0;
    std::vector<uint16_t> more_tags;  // a read burst's tags besides the one in its header
    uint64_t issued_ps = 0;
    bool outstanding = false;  // issued, and neither complete nor timed out
  };
  void store_completion(tlm::tlm_generic_payload& gp);
  void issue();
  bool window_open() const;
  void pop_front_job();
  // Whether `o` has TLPs left to issue and may issue them now (not waiting for earlier jobs):
  // the jobs a job takes turns with.
  bool still_issues(const active_job& o) const;
  bool others_take_turns(const active_job& j) const;  // other jobs still issue beside it
  bool issue_one(active_job& j);
  void finish_read(uint16_t tag);
  void arm_timeout(uint64_t at);
  void completion_timeout();
  void advance_segment(active_job& j);
  bool waits_for_earlier(const active_job& j) const;
  uint32_t read_burst_tags() const;                 // tags a read burst takes
  uint32_t burst_limit(const active_job& j) const;  // TLPs the next burst may stand for
  uint32_t nominal_burst_tlps(const active_job& j) const;
  uint32_t ramp_limit(const active_job& j) const;  // TLPs at the job's start and end
  uint32_t turn_limit(const active_job& j) const;  // TLPs the other jobs' bursts stand for
  bool burst_tags_ready(const active_job& j) const;
  uint32_t burst_size(const dma_job& j) const;  // bytes per burst for this job
  transport::tlp_txn& make(const pcie::tlp_header& h, uint32_t stream, bool burst, uint32_t tlps,
                           uint32_t unit);

  transport::pcie_port& m_port;
  transport::tlp_pool& m_pool;
  memory::backing_store& m_local;
  requester_params m_params;
  transport::stream_log& m_log;
  pcie::tag_pool m_tags;
  command_pipes m_pipes;
  std::vector<read_slot> m_reads;  // by tag
  std::list<active_job> m_active;  // round robin: front issues next
  uint64_t m_submitted = 0;
  uint64_t m_tlps = 0;  // TLPs issued, every job
  // TLPs handed to the link and not started yet, posted and non-posted apart: a requester
  // keeps separate queues so a write can pass a read blocked on credits (PCIe ordering, Yes).
  int m_unsent[2] = {0, 0};
  int m_jobs_of[2] = {0, 0};  // jobs in m_active, posted and non-posted apart
  bool m_issuing = false;
  // Burst fidelity: the shortest round trip of a read burst so far to each completer (a
  // farther target's reads take longer without queueing: seed 25 of the generator read a
  // GPU behind the root complex after a NIC under the same switch, and its reads seemed to
  // queue), whether the last one took twice that (reads queue behind each other: bandwidth,
  // not tags, limits them), and how many tags it shows waiting in that queue
  // (read_burst_tags).
  std::map<uint16_t, uint64_t> m_min_read_rtt;
  bool m_reads_queue = false;
  uint32_t m_spare_tags = 0;
  requester_stats m_stats;
  // One timer for the oldest outstanding read, set only while reads are outstanding (so a
  // run that finishes its reads has no event left at the timeout).
  sc_core::sc_event m_timeout;
  uint64_t m_timeout_at = 0;  // 0: not set
};

}  // namespace p2psim::dma
