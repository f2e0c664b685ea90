// How a root complex forwards peer-to-peer traffic between its root ports, or onto the
// socket interconnect: a property of the platform (GPUDirect RDMA 13.3, 5.4; docs/design.md,
// "Topology classes").
//   routed       whether it forwards at all (if not: Unsupported Request);
//   tlp_bytes    the size it re-emits writes and read requests in (some Intel root complexes
//                cut P2P traffic into 64 B TLPs);
//   outstanding  how many P2P read requests it keeps in flight (it proxies them with tags of
//                its own and returns the data to the original requester in order);
//   bandwidth    a throughput cap of its forwarding path;
//   latency      extra latency on the P2P path.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include <tlm>

#include "models/memory/throughput.h"
#include "models/pcie/tag_pool.h"
#include "models/pcie/tlp.h"
#include "models/root_complex/platform_spec.h"
#include "models/transport/tlp_txn.h"

namespace p2psim::root_complex {

// The interface the forwarder sends through (the root complex implements it).
class forward_ports {
 public:
  virtual ~forward_ports() = default;
  virtual void send(int port, tlm::tlm_generic_payload& gp, uint64_t delay_ps) = 0;
  virtual void free_buffer(int port, tlm::tlm_generic_payload& gp) = 0;  // free an ingress buffer
  virtual uint16_t own_id() const = 0;
  virtual void refused(tlm::tlm_generic_payload& gp, int in) = 0;  // answer UR
};

class p2p_forwarder {
 public:
  // Proxied reads use tags [tag_base, tag_base + proxy_tags) of the root complex's ID.
  static constexpr uint16_t proxy_tags = 512;
  // `pool`: the simulation's, which the pieces and proxied reads it issues come from.
  p2p_forwarder(const forwarding_spec& p, forward_ports& ports, transport::tlp_pool& pool,
                uint64_t base_latency_ps, uint16_t tag_base);
  // A request from port `in` for a peer behind port `out`.
  void forward(tlm::tlm_generic_payload& gp, int in, int out);
  // A completion addressed to the root complex itself: one of the proxied reads. Returns
  // false if it was not ours.
  bool completion(tlm::tlm_generic_payload& gp, int in);
  const forwarding_spec& params() const { return m_params; }
  // The least time request `h` (a burst of `tlps`) holds its ingress buffer once forward()
  // has it (burst fidelity's credit pacing, tlp_handler::least_hold_ps); `piece_ps`: one of
  // the TLPs it re-emits a write in, on the link it leaves by (0: not known).
  uint64_t least_hold_ps(const pcie::tlp_header& h, uint32_t tlps, uint64_t piece_ps) const;
  uint64_t refused_requests() const { return m_refused; }
  // Burst fidelity: bursts of several TLPs that passed a bandwidth cap, each whole (the
  // cap passes a burst on once all of it is through, not TLP by TLP).
  uint64_t capped_bursts() const { return m_capped_bursts; }
  // Burst fidelity: P2P reads that queued behind a read burst of another stream with at least
  // four times as many requests still to issue. The queue serves reads in the order they came
  // and a burst came whole with its first request, so they waited for all of it, where TLP by
  // TLP they would have waited for the requests of it that had come in before them.
  uint64_t reads_held_behind_bursts() const { return m_reads_held_behind_bursts; }

 private:
  // Burst fidelity: what a completion burst passed on keeps of the one that came in.
  struct completion_shape {
    uint32_t tlps = 1;                         // completions it stands for
    uint64_t lag_ps = 0;                       // how long after the first the last came in
    uint32_t first_bytes = 0, last_bytes = 0;  // the first's and the last's payloads
  };
  struct proxied_read {
    pcie::tlp_header orig;
    tlm::tlm_generic_payload* orig_gp;
    uint32_t stream;
    int in, out;
    uint64_t next_issue, next_deliver, end;
    uint32_t burst_unit = 0;  // burst fidelity: the original burst's request size; 0: a TLP
    struct early_data {
      std::vector<uint8_t> bytes;
      completion_shape shape;
    };
    std::map<uint64_t, early_data> early;  // data that overtook earlier data
    bool failed = false;
    uint32_t in_flight = 0;  // pieces issued and not fully answered
  };
  struct sub_read {
    proxied_read* read = nullptr;
    uint32_t remaining = 0;
    uint32_t requests = 1;            // read requests it stands for (burst fidelity: many)
    std::vector<uint16_t> more_tags;  // their tags besides the first
  };
  void forward_write(tlm::tlm_generic_payload& gp, int in, int out);
  bool proxies_reads() const;
  void issue_reads();
  void deliver(proxied_read& r, uint64_t address, const uint8_t* data, uint32_t len,
               const completion_shape& shape);
  // The next sub-read of `r`: where it stops and how many requests it stands for.
  uint64_t next_stop(const proxied_read& r, uint32_t& requests) const;
  void finish_if_done(proxied_read* r);
  // Whether a read of `stream` standing for `requests` requests, queued now, waits behind a
  // read burst of another stream at least four times as large.
  bool queued_behind_burst(uint32_t stream, uint32_t requests) const;

  forwarding_spec m_params;
  forward_ports& m_ports;
  transport::tlp_pool& m_pool;
  uint64_t m_latency_ps;
  memory::throughput m_write_cap, m_read_cap;
  uint16_t m_tag_base;
  pcie::tag_pool m_tags{proxy_tags};
  std::vector<sub_read> m_subs = std::vector<sub_read>(proxy_tags);  // by tag - m_tag_base
  std::deque<proxied_read*> m_waiting;  // reads with sub-requests still to issue
  std::vector<std::unique_ptr<proxied_read>> m_reads;
  uint32_t m_in_flight = 0;
  uint64_t m_refused = 0;
  uint64_t m_capped_bursts = 0;
  uint64_t m_reads_held_behind_bursts = 0;
};

}  // namespace p2psim::root_complex
