// One direction of a link: a transmit queue per flow-control class, an arbiter that follows
// the PCIe ordering table, the credits the far receiver advertised, and a serializer.
// A TLP starts when the serializer is free, it is ready (its sender's latency has passed)
// and the receiver has credits; it arrives one serialization time plus the propagation
// latency later. Both directions of a pcie_link or interconnect_link are link_channels.
#pragma once

#include <string>
#include <systemc>
#include <tlm>
#include <vector>
#include "models/pcie/fifo.h"
#include "models/stats/stat.h"

#include "models/link/burst_gaps.h"
#include "models/link/burst_holds.h"
#include "models/pcie/credit_demand.h"
#include "models/pcie/credit_window.h"
#include "models/pcie/credits.h"
#include "models/pcie/link_timing.h"
#include "models/pcie/order_policy.h"
#include "models/pcie/tlp.h"
#include "models/transport/hop_interfaces.h"
#include "models/transport/lookahead.h"
#include "models/transport/tlp_txn.h"

namespace p2psim::transport {
class stream_log;
class pcie_port;
}  // namespace p2psim::transport

namespace p2psim::link {

struct channel_timing {
  double ps_per_byte = 0;    // 1 / raw bandwidth
  uint64_t latency_ps = 0;   // propagation, one way
  bool pcie_framing = true;  // PCIe: framing + header + ECRC; else packet_overhead per TLP
  bool ecrc = false;         // every TLP on this link carries a 4-byte TLP digest
  uint32_t packet_overhead = 0;
  uint32_t ack_limit = 0;          // bytes between ACK DLLPs (0: none)
  uint32_t fc_limit = 0;           // bytes between UpdateFC DLLPs (0: none)
  bool skip_ordered_sets = false;  // SKIPs take pcie::skip_fraction of the symbol times
};

struct channel_stats {
  uint64_t tlps = 0;
  uint64_t payload_bytes = 0;
  uint64_t wire_bytes = 0;  // TLPs plus the DLLPs charged to this direction
  uint64_t dllps = 0;
  uint64_t busy_ps = 0;        // time the serializer was sending
  uint64_t credit_stalls = 0;  // TLPs that waited for credits: ready, the serializer free
  uint64_t max_queue_tlps = 0;
  uint64_t relaxed_ordering_tlps = 0;  // TLPs with the RO attribute set
  uint64_t dropped_tlps = 0;           // discarded because the link was down
  uint64_t dropped_bytes = 0;          // their payload
};

inline const stats::table<channel_stats>& channel_stat_table() {
  using stats::unit;
  static const stats::table<channel_stats> t{
      stats::counter("tlps", &channel_stats::tlps, unit::tlps, "TLPs sent."),
      stats::counter("payload_bytes", &channel_stats::payload_bytes, unit::bytes, "Their payload."),
      stats::counter("wire_bytes", &channel_stats::wire_bytes, unit::bytes,
                     "TLPs with headers and framing, plus the DLLPs charged to this direction."),
      stats::counter("dllps", &channel_stats::dllps, unit::count, "ACK and UpdateFC DLLPs."),
      stats::counter("busy_ps", &channel_stats::busy_ps, unit::picoseconds,
                     "Time the serializer was sending."),
      stats::time_share("utilization_ratio", &channel_stats::busy_ps,
                        "busy_ps over the simulated time."),
      stats::counter("credit_stalls", &channel_stats::credit_stalls, unit::tlps,
                     "TLPs that waited for flow-control credits while ready and the serializer "
                     "free (of their own, or of an older TLP they may not pass)."),
      stats::counter("max_queue_tlps", &channel_stats::max_queue_tlps, unit::tlps,
                     "Most TLPs queued at once."),
      stats::counter("relaxed_ordering_tlps", &channel_stats::relaxed_ordering_tlps, unit::tlps,
                     "TLPs with the Relaxed Ordering attribute."),
      stats::counter("dropped_tlps", &channel_stats::dropped_tlps, unit::tlps,
                     "TLPs discarded because the link was down."),
      stats::counter("dropped_bytes", &channel_stats::dropped_bytes, unit::bytes, "Their payload."),
  };
  return t;
}

// How the receiver of a direction holds a TLP before it frees its buffer (burst fidelity's
// credit loops, models/pcie/credit_loop.h): usually, at the least, and whether from the TLP's
// tail (store and forward) or its header (cut-through).
struct receiver_hold {
  uint64_t usual_ps = 0, least_ps = 0;
  bool from_tail = true;
};

class link_channel : public sc_core::sc_module,
                     private transport::hop_forward,
                     private transport::hop_backward {
 public:
  tlm::tlm_target_socket<> in;      // from the transmitting port
  tlm::tlm_initiator_socket<> out;  // to the receiving port

  // `order`: the fabric's ordering table and choice source, which outlive the channel.
  link_channel(sc_core::sc_module_name name, const channel_timing& timing,
               const pcie::credit_limits& receiver_credits, const pcie::order_policy& order);
  // As of now: a TLP started ahead counts once its start time has come (lookahead.h).
  channel_stats stats() const;
  const channel_timing& timing() const { return m_timing; }
  // What the receiver advertised (0: infinite).
  const pcie::credit_limits& receiver_credits() const { return m_receiver_credits; }
  // Burst fidelity: how often a transmission of another stream waited for a burst of at least
  // four times as many TLPs to finish here (TLP by TLP it would have waited for one TLP).
  uint64_t held_behind_bursts() const { return m_holds.count(); }
  uint64_t held_behind_ran_ahead_bursts() const { return m_holds.count_ran_ahead(); }
  // Burst fidelity: start no more of a class's TLPs within a credit loop than the receiver
  // has credits for (models/pcie/credit_window.h), given the least time it holds a TLP; and
  // measure the credits each class would have needed TLP by TLP (models/pcie/credit_demand.h),
  // given the time it usually does. Off by default: TLP by TLP, credits hold TLPs back as they
  // are.
  void pace_bursts_by_credits(const receiver_hold& hold);
  const pcie::credit_demand* credit_demand(pcie::fc_class c) const {
    return m_demand.empty() ? nullptr : &m_demand[size_t(c)];
  }
  const pcie::order_policy& order() const { return m_order; }  // its fabric's
  // Serialization time of one TLP on this channel, DLLP share excluded (for tests, reports).
  uint64_t serialization_ps(const pcie::tlp_header& h) const;
  // The link went down (DL_Down): every TLP queued here and every one handed over later is
  // discarded, its sender told it has left. Posted writes count as lost bytes of their
  // stream in `log`; a dropped request or completion is for its requester's completion
  // timeout to notice. Not reversible: a link that retrains is a new run.
  void go_down(transport::stream_log& log);
  bool down() const { return m_log_when_down != nullptr; }
  // What holds the TLPs queued here, for a run that stalled ("" when none is queued).
  std::string blocked() const;
  // Once a run is over, every TLP sent here has been freed by its receiver: the credits
  // still out (or returned beyond what was taken), by class, for a run whose receivers did
  // not give back exactly what they took ("" when they did).
  std::string unbalanced_credits() const;
  // The port that hands this channel its TLPs: if its owner allows it, TLPs are started
  // ahead (models/transport/lookahead.h).
  void set_sender(const transport::pcie_port& sender);
  // The port it delivers to.
  void set_receiver(const transport::pcie_port& receiver);
  // The link's promise (lookahead.h): whether every TLP (of `which`) not on the wire yet
  // reaches the receiving port no sooner than `t`. The queued ones start no sooner than
  // they are ready; for those still to come the sender must promise in turn.
  bool promises_arrival_no_sooner_than(uint64_t t, transport::promise_scope which) const;

 private:
  struct entry {
    tlm::tlm_generic_payload* gp;
    uint64_t ready_ps;
    uint64_t seq;
    uint64_t queued_ps;  // when it was handed over
    // Its credits (a header credit per TLP: more than one only for a burst), taken as it is
    // queued: deciding whether it may start then reads no TLP (a queued TLP is often out of
    // the cache by then).
    pcie::credit_cost cost;
  };
  entry make_entry(tlm::tlm_generic_payload& gp, uint64_t ready_ps, uint64_t queued_ps);
  // The sender hands a TLP over through `in` (BEGIN_REQ).
  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                     sc_core::sc_time& d) override;
  // The receiver frees a TLP's buffer, through `out` (END_REQ).
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                     sc_core::sc_time& d) override;
  void pump();
  struct slot {  // where a queued TLP is: its class queue and position in it
    int cls = -1;
    size_t index = 0;
  };
  slot pick(uint64_t now, uint64_t& wake_at);
  slot pick_explored(uint64_t now, uint64_t& wake_at, pcie::choice_source& choices);
  // Sends `e`, starting at `at` (now, or later when scheduled ahead; `in_gaps`: in the gaps
  // of the burst on the wire, burst_gaps.h).
  // Inline: every TLP starts here, from both source files.
  void start(const entry& e, uint64_t at, uint64_t now, bool in_gaps = false) {
    if (e.cost.header <= 1 && !in_gaps && m_windows.empty() && transport::meta(*e.gp).tlps == 1)
      start_tlp(e, at, now);
    else
      start_burst(e, at, now, in_gaps);
  }
  void start_tlp(const entry& e, uint64_t at, uint64_t now);  // one TLP, its wire not paced
  // A burst, or any TLP where credits pace the wire (burst fidelity).
  void start_burst(entry e, uint64_t at, uint64_t now, bool in_gaps);
  // Burst fidelity (link_channel_bursts.cpp): a transmission that started at `start_ps`
  // takes the wire until `end_ps` (its last TLP through; `paced`: held back by credits) while
  // its TLPs' symbols take `tlp_symbols_ps` and all its symbols `symbols_ps`. Sets when the
  // wire is free, and the gaps it leaves; returns when its last TLP is through, later if it
  // went in another burst's gaps.
  struct wire_use {
    uint64_t start_ps, first_ps, end_ps, tlp_symbols_ps, symbols_ps;
    uint64_t queued_ps;  // when its first TLP was handed over (its lag: when the last was)
  };
  uint64_t occupy_wire(const tlm::tlm_generic_payload& gp, const wire_use& use, bool paced,
                       bool in_gaps);
  // Starts the oldest TLP that may go now in the gaps of the burst on the wire; if none,
  // `wake` is when one might (no_wake: not before the wire is free).
  bool fill_gap(uint64_t now, uint64_t& wake);
  // Framing, header and digest: what each TLP adds to its payload on the wire. Inline: it
  // runs for every TLP on every link.
  uint64_t tlp_overhead_bytes(const pcie::tlp_header& h) const {
    if (!m_timing.pcie_framing) return m_timing.packet_overhead;
    return pcie::framing_bytes + pcie::header_bytes(h.type, h.addr64()) +
           (h.ecrc || m_timing.ecrc ? 4 : 0);  // the TLP's digest, or the one this link adds
  }
  uint64_t tlp_wire_ps(const tlm::tlm_generic_payload& gp) const;  // per TLP of a burst
  // Burst fidelity (link_channel_bursts.cpp): how many of burst `e`'s TLPs, starting at `at`,
  // go before a TLP queued in another class would pass the rest of them (0: all of them go),
  // and the cut itself: `e` becomes its first TLPs, the rest is returned (null: not cut).
  uint32_t tlps_before_overtaken(const entry& e, uint64_t at) const;
  tlm::tlm_generic_payload* cut_burst(entry& e, uint64_t at, uint64_t now, uint64_t& rest_ready);
  bool start_ahead(uint64_t now);
  // Takes entry `index` of class `cls`'s queue off; the head, it asks the cache for the next.
  // Inline: every TLP is taken, from both source files.
  entry take(int cls, size_t index) {
    auto& q = m_queue[cls];
    entry e = q[index];
    if (index == 0) {
      q.pop_front();
      if (!q.empty()) transport::prefetch(*q.front().gp);  // the class's next head
    } else {
      q.erase(q.begin() + long(index));
    }
    return e;
  }
  int oldest_class() const;  // of the oldest queued TLP (-1: none)
  uint64_t next_chance();
  static pcie::credit_cost credit_cost_of(const tlm::tlm_generic_payload& gp);
  // The receiver has room; a burst of one TLP starts as that TLP would
  // (credit_gate::can_start_burst). Inline: every TLP asks, from both source files.
  bool may_start(const entry& e, int cls) const {
    const auto c = pcie::fc_class(cls);
    return e.cost.header > 1 ? m_credits.can_start_burst(c, e.cost) : m_credits.can_send(c, e.cost);
  }
  void wake_at(uint64_t t, uint64_t now);
  void drop(tlm::tlm_generic_payload& gp);
  // Request bursts an endpoint sent, by when their last TLP starts: their sender is told of
  // the departure then (start()).
  struct departure {
    uint64_t at_ps;
    tlm::tlm_generic_payload* gp;
  };
  pcie::fifo<departure> m_departures;
  void tell_departures(uint64_t up_to);  // those due by `up_to`
  // Tells the sender that `gp` leaves at `at` (END_REQ): it frees the buffer `gp` held.
  void tell_sender(tlm::tlm_generic_payload& gp, uint64_t at, uint64_t now);

  channel_timing m_timing;
  const pcie::order_policy& m_order;
  double m_ps_per_wire_byte;  // SKIP ordered sets included
  pcie::credit_limits m_receiver_credits;
  pcie::credit_gate m_credits;
  burst_holds m_holds;
  pcie::fifo<entry> m_queue[pcie::fc_class_count];
  uint64_t m_seq = 0;
  uint64_t m_busy_until = 0;
  burst_gaps m_gaps;  // those of the burst on the wire (burst fidelity)
  const transport::pcie_port* m_receiver = nullptr;
  // Time since the last ACK / UpdateFC DLLP, where SKIPs are sent in 1/1534 of a byte's symbol
  // times, else in bytes (dllps_due_for).
  uint64_t m_ack_time = 0, m_fc_time = 0;
  bool m_pumping = false;
  const transport::pcie_port* m_sender = nullptr;  // set when it allows starting ahead
  // The sender is an endpoint: its requester hands over a request TLP when the one before
  // it starts (set_sender).
  bool m_requester_feed = false;
  // The sender promised to hand over no TLP ready before this when one started ahead on its
  // word; one that is would have gone first: a model error.
  uint64_t m_promised_ps = 0;
  // What a TLP's start adds to the stats.
  struct start_counts {
    uint64_t tlps, relaxed_ordering_tlps, payload_bytes, wire_bytes, dllps, busy_ps;
    bool credit_stall;
  };
  static void count(channel_stats& s, const start_counts& c);
  // TLPs started ahead whose start is still to come, by start time: they count as queued
  // (max_queue_tlps) until then, in the stats from then on, and as dropped if the link goes down
  // before.
  struct started_ahead {
    uint64_t start_ps;
    start_counts counts;
  };
  pcie::fifo<started_ahead> m_started_ahead;
  // Counts those whose start has come; returns how many are still to start.
  size_t settle_started_ahead(uint64_t now);
  transport::stream_log* m_log_when_down = nullptr;  // set when the link goes down
  // When the pump is next woken, as far as this channel knows (no_wake: not at all). Each
  // TLP and credit return asks for a wake; most ask for one already pending, and skipping
  // those saves the kernel a notification each. It is never earlier than the wake really
  // pending, so a wake it skips for is one that really comes.
  static constexpr uint64_t no_wake = UINT64_MAX;
  uint64_t m_wake_at = no_wake;
  sc_core::sc_event m_wake;
  void woken();
  channel_stats m_stats;
  std::vector<pcie::credit_demand> m_demand;   // by class, when tracked
  std::vector<pcie::credit_window> m_windows;  // by class, when paced
};

}  // namespace p2psim::link
