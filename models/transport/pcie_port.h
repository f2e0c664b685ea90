// One PCIe port of a component (endpoint, switch port, root port): a TLM initiator socket
// into the link's transmit side and a target socket for what the link delivers.
//
// The hop protocol, the same on both sockets:
//   BEGIN_REQ (forward)  hands a TLP over; its delay is when it may leave / when it arrives;
//   END_REQ (backward)   says the buffer the TLP occupied is free again, its delay is when:
//                        the link uses it to return flow-control credits, the sender to know
//                        when the TLP leaves.
// Completions are TLPs of their own, so BEGIN_RESP is never used.
#pragma once

#include <cstdint>
#include <systemc>
#include <tlm>
#include "models/pcie/fifo.h"
#include "models/pcie/tlp.h"
#include "models/transport/hop_interfaces.h"
#include "models/transport/lookahead.h"

namespace p2psim::link {
class link_channel;
}

namespace p2psim::transport {

class stream_log;

// Implemented by every component that owns ports; what it promises a link is in
// lookahead.h.
class tlp_handler : public lookahead_sender {
 public:
  virtual ~tlp_handler() = default;
  // A TLP has fully arrived at `port` (its tail crossed the link).
  virtual void receive(int port, tlm::tlm_generic_payload& gp) = 0;
  // The link behind `port` starts transmitting a TLP this component sent, `after_ps` from
  // now: 0 unless this component allows starting ahead (lookahead.h).
  virtual void sent(int port, tlm::tlm_generic_payload& gp, uint64_t after_ps) = 0;
  // Burst fidelity: whether receive() takes a burst as soon as its first TLP is in (a
  // switch or root complex forwarding it cut-through, meta.lag_ps telling when the rest
  // follows) rather than once the whole burst is (an endpoint that consumes it).
  virtual bool forwards_bursts() const { return false; }
  // Burst fidelity: whether receive() takes a burst of writes to its memory as soon as its
  // first TLP is in (meta.lag_ps telling when the last follows), storing it as it comes and
  // freeing its TLPs' buffers one by one, as TLP by TLP (a memory_completer does both), rather
  // than once the whole burst is in, freeing it whole.
  virtual bool takes_write_bursts_as_they_come() const { return false; }
  // Burst fidelity's credit pacing (link_channel::pace_bursts_by_credits): the least time
  // this component is sure to hold `gp`'s buffer at `port` once it is in, where that depends
  // on the TLP (a root complex forwarding it to a peer holds it for its forwarding latency;
  // a memory write it frees as soon as the data path has it). 0: nothing beyond what the
  // link was told of the receiver as a whole.
  virtual uint64_t least_hold_ps(int /*port*/, const tlm::tlm_generic_payload& /*gp*/) const {
    return 0;
  }
  // Burst fidelity: how long after the first TLP of completion burst `gp` comes in at `port`
  // this component takes it in (a requester frees the tags of the requests it ends then; the
  // rest of the lag tells it when the last byte lands). Halfway unless it knows better.
  virtual uint64_t completion_burst_wait_ps(int port, const tlm::tlm_generic_payload& gp) const;
};

class pcie_port : public sc_core::sc_module, private hop_forward, private hop_backward {
 public:
  tlm::tlm_initiator_socket<> tx;  // into the link's transmit side
  tlm::tlm_target_socket<> rx;     // what the link delivers

  pcie_port(sc_core::sc_module_name name, tlp_handler& owner, int index);
  int index() const { return m_index; }
  // What the link this port sends into asks its owner (lookahead.h).
  bool owner_allows_start_ahead() const { return m_owner.allows_start_ahead(); }
  bool owner_forwards_bursts() const { return m_owner.forwards_bursts(); }
  uint64_t owner_least_hold_ps(const tlm::tlm_generic_payload& gp) const {
    return m_owner.least_hold_ps(m_index, gp);
  }
  bool owner_promises_ready_no_sooner_than(uint64_t t, promise_scope which) const {
    return m_owner.promises_ready_no_sooner_than(m_index, t, which);
  }
  // Hands a TLP to the link; it leaves no earlier than now + not_before.
  void send(tlm::tlm_generic_payload& gp, const sc_core::sc_time& not_before);
  void send(tlm::tlm_generic_payload& gp) { send(gp, sc_core::SC_ZERO_TIME); }
  // Frees the receive buffer a delivered TLP held, `after` from now (credits go back).
  void free_buffer(tlm::tlm_generic_payload& gp, const sc_core::sc_time& after);
  void free_buffer(tlm::tlm_generic_payload& gp) { free_buffer(gp, sc_core::SC_ZERO_TIME); }
  // The link behind this port went down: TLPs still on the wire toward it never arrive
  // (posted writes count as lost in `log`), and nothing arrives from now on.
  void link_down(stream_log& log);
  bool link_up() const { return m_down_log == nullptr; }
  // TLPs on the wire toward this port, in arrival order (for its owner's promises), with
  // what a promise needs of each at hand.
  struct arrival {
    uint64_t at_ps;
    tlm::tlm_generic_payload* gp;
    uint64_t ser_ps;  // its serialization time on the link (meta.last_ser_ps)
    pcie::tlp_type type;
    uint16_t requester_id;
  };
  const pcie::fifo<arrival>& arriving() const { return m_arrivals; }
  size_t arriving_of(pcie::fc_class c) const { return m_arriving_of[int(c)]; }  // how many
  // When the last TLP on the wire toward this port is taken in (0: none is on the wire).
  uint64_t last_arrival_ps() const { return m_arrivals.empty() ? 0 : m_arrivals.back().at_ps; }
  // The link direction that delivers to this port (set when the link connects).
  void set_feed(const link::link_channel& feed);
  // The link direction this port sends into (set when the link connects).
  void set_egress(const link::link_channel& egress) { m_egress = &egress; }
  // How long TLP `h` takes on that link's wire (0 before it connects).
  uint64_t egress_serialization_ps(const pcie::tlp_header& h) const;
  // The feed's lead: a TLP not yet on the wire toward this port arrives no sooner than this
  // from now (0 before the link connects).
  uint64_t feed_lead_ps() const { return m_feed_lead_ps; }
  // The feed's promise: whether every TLP (of `which`) not on the wire yet arrives here no
  // sooner than `t`.
  bool feed_promises_arrival_no_sooner_than(uint64_t t, promise_scope which) const;

 private:
  // A TLP arrives through rx (BEGIN_REQ).
  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                     sc_core::sc_time& d) override;
  // The link tells, through tx, when a TLP sent leaves (END_REQ).
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                     sc_core::sc_time& d) override;
  void arrive();

  tlp_handler& m_owner;
  int m_index;
  // TLPs on their way in, by arrival time. One link feeds a port and a TLP starts only when
  // the one before it has been sent, so they arrive in the order they were sent: a FIFO
  // and one event do what a payload event queue would, for less.
  pcie::fifo<arrival> m_arrivals;
  size_t m_arriving_of[pcie::fc_class_count] = {};  // m_arrivals by flow-control class
  tlm::tlm_generic_payload* pop_arrival();
  stream_log* m_down_log = nullptr;  // set when the link went down
  const link::link_channel* m_feed = nullptr;
  const link::link_channel* m_egress = nullptr;
  uint64_t m_feed_lead_ps = 0;  // the feed's latency, kept at hand: every promise asks
  void discard(tlm::tlm_generic_payload& gp);
  sc_core::sc_event m_arrived;
};

}  // namespace p2psim::transport
