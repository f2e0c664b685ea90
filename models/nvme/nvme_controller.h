// An NVMe SSD as a PCIe endpoint: GPUDirect Storage's storage adapter, a third-party peer
// that moves data between its flash and GPU BAR1 or host memory. BAR0 holds the controller's
// registers (plain memory here); jobs become NVMe commands on I/O queue pairs modelled inside
// the controller (nvme_queues.h), and their data moves through a dma_requester:
//   dma_job::write (flash -> bus), NVMe Read:  after command_latency, read_latency and the
//     media read, posted writes on the job's stream; the completion entry is posted when the
//     command's last write leaves.
//   !dma_job::write (bus -> flash), NVMe Write: after command_latency, read requests on a
//     stream of the controller's own; once all came back, the media write and write_latency,
//     then the completion entry, and only then the bytes count on the job's stream.
// Submission/completion queue traffic in host memory (64 B SQE fetch, 16 B CQE write, MSI-X)
// is not put on the bus.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <queue>
#include <systemc>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "models/dma/dma_initiator.h"
#include "models/dma/dma_requester.h"
#include "models/dma/memory_completer.h"
#include "models/memory/backing_store.h"
#include "models/nvme/nvme_queues.h"
#include "models/nvme/nvme_spec.h"
#include "models/nvme/nvme_stats.h"
#include "models/pcie/window.h"
#include "models/transport/pcie_port.h"
#include "models/transport/stream_log.h"

namespace p2psim::nvme {

// The declared settings and what elaboration decides.
struct nvme_params : nvme_spec {
  uint16_t bdf = 0;
  pcie::window bar0;
  dma::requester_params requester;  // MPS, MRRS, tags
};

class nvme_controller : public sc_core::sc_module,
                        public transport::tlp_handler,
                        public dma::dma_initiator {
 public:
  transport::pcie_port port;

  // `pool`: the simulation's, which the controller's TLPs come from.
  nvme_controller(sc_core::sc_module_name name, const nvme_params& p, transport::tlp_pool& pool,
                  transport::stream_log& log);
  // Cuts the job into NVMe commands on the queue pairs. Throws std::invalid_argument for an
  // AtomicOp (an SSD issues none) or a job past the capacity.
  void submit(dma::dma_job job) override;
  memory::backing_store& local_memory() override { return m_flash; }  // the flash
  const dma::dma_requester& requester() const override { return m_req; }
  uint64_t completion_burst_wait_ps(int, const tlm::tlm_generic_payload& gp) const override {
    return m_req.completion_burst_wait_ps(gp);
  }
  const nvme_params& params() const { return m_params; }
  const nvme_stats& stats() const { return m_queues.stats(); }
  // The queue pairs, with every completion entry posted so far.
  const nvme_queues& queues() const { return m_queues; }

  void receive(int port, tlm::tlm_generic_payload& gp) override;
  void sent(int port, tlm::tlm_generic_payload& gp, uint64_t after_ps) override;

 private:
  enum class phase { start, data_out, persisted };
  struct due {
    uint64_t at_ps;
    uint64_t seq;  // ties in submission order: runs are reproducible
    phase what;
    uint64_t command;
    bool operator>(const due& o) const { return std::tie(at_ps, seq) > std::tie(o.at_ps, o.seq); }
  };
  // A Read command's data on its way out: the segment and the bytes of it gone.
  struct outgoing {
    size_t segment = 0;
    uint64_t done = 0;
  };
  using departure_key = std::pair<uint32_t, uint64_t>;  // (stream, next bus address)

  void schedule(uint64_t at_ps, phase what, uint64_t command);
  void schedule_starts(const std::vector<uint64_t>& commands);
  void run_due();
  void start(uint64_t id);
  void send_data(uint64_t id);
  void departed(uint32_t stream, uint64_t address, uint64_t length);
  void written_data_arrived();
  void persisted(uint64_t id);
  void finish(uint64_t id, status s);

  nvme_params m_params;
  transport::stream_log& m_log;
  memory::backing_store m_flash;
  memory::backing_store m_regs;
  dma::memory_completer m_reg_port;
  dma::dma_requester m_req;
  nvme_queues m_queues;
  std::priority_queue<due, std::vector<due>, std::greater<>> m_due;
  uint64_t m_due_seq = 0;
  sc_core::sc_event m_due_event;
  // Read commands whose data is leaving, by where their next write starts: the requester
  // interleaves the writes of commands on one stream, each command's in address order.
  std::multimap<departure_key, uint64_t> m_departures;
  std::unordered_map<uint64_t, outgoing> m_outgoing;
  // Write commands reading their data: the controller's stream for each, in opening order.
  std::map<uint32_t, uint64_t> m_arriving;
  std::unordered_map<uint64_t, uint32_t> m_write_stream;  // command -> its stream
};

}  // namespace p2psim::nvme
