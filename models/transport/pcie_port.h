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

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <cstdint>
#include <systemc>
#include <tlm>
#include "models/pcie/fifo.h"
#include "models/pcie/tlp.h"

namespace p2psim::link {
class link_channel;
}

namespace p2psim::transport {

class stream_log;

enum class tlp_scope { all, completions };  // which TLPs a promise (below) is about

class tlp_handler {  // implemented by every component that owns ports
 public:
  virtual ~tlp_handler() = default;
  // A TLP has fully arrived at `port` (its tail crossed the link).
  virtual void receive(int port, tlm::tlm_generic_payload& gp) = 0;
  // The link behind `port` starts transmitting a TLP this component sent, `after_ps` from
  // now: 0 unless this component takes departures ahead (below).
  virtual void sent(int port, tlm::tlm_generic_payload& gp, uint64_t after_ps) = 0;
  // Whether sent() may come ahead of the departure, its after_ps telling when the TLP
  // leaves. A switch or root complex only frees buffers then (with that delay), so the
  // link may schedule a TLP the moment its start is certain instead of waking to start it:
  // one SystemC activation fewer per TLP. A requester acts on a departure at once (it
  // issues the next TLP), so it keeps the default.
  virtual bool takes_departures_ahead() const { return false; }
  // For a component that takes departures ahead: whether every TLP it will still hand to
  // `port` (from now on) is ready no earlier than `t`. If so, a link that is idle but
  // whose oldest TLP is ready only at `t` knows that one starts then, and schedules it at
  // once rather than waking at `t` (another activation saved). "No" is always safe.
  // `which` narrows the promise to completions (asked by a root complex about the
  // interconnect: only completions from there go on to a device at once).
  virtual bool hands_nothing_before(int port, uint64_t t, tlp_scope which) const {
    (void)port, (void)t, (void)which;
    return false;
  }
  // Burst fidelity: whether receive() takes a burst as soon as its first TLP is in (a
  // switch or root complex forwarding it cut-through, meta.lag_ps telling when the rest
  // follows) rather than once the whole burst is (an endpoint that consumes it).
  virtual bool forwards_bursts() const { return false; }
};

class pcie_port : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<pcie_port> tx;
  tlm_utils::simple_target_socket<pcie_port> rx;

  pcie_port(sc_core::sc_module_name name, tlp_handler& owner, int index);
  int index() const { return m_index; }
  bool owner_takes_departures_ahead() const { return m_owner.takes_departures_ahead(); }
  bool owner_hands_nothing_before(uint64_t t, tlp_scope which) const {
    return m_owner.hands_nothing_before(m_index, t, which);
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
  // TLPs on the wire toward this port, in arrival order (for its owner's lookahead), with
  // what the lookahead needs of each at hand.
  struct arrival {
    uint64_t at_ps;
    tlm::tlm_generic_payload* gp;
    uint64_t ser_ps;  // its serialization time on the link (meta.last_ser_ps)
    pcie::tlp_type type;
    uint16_t requester_id;
  };
  const pcie::fifo<arrival>& arriving() const { return m_arrivals; }
  size_t arriving_of(pcie::fc_class c) const { return m_arriving_of[int(c)]; }  // how many
  // The link direction that delivers to this port (set when the link connects).
  void set_feed(const link::link_channel& feed);
  // A TLP not yet on the wire toward this port arrives no sooner than this from now: the
  // feeding link's propagation latency (0 before it connects).
  uint64_t arrival_lead_ps() const { return m_arrival_lead_ps; }
  // Whether no completion that is not on the wire yet arrives here before `t`.
  bool no_completion_arrives_before(uint64_t t) const;

 private:
  tlm::tlm_sync_enum rx_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_core::sc_time& d);
  tlm::tlm_sync_enum tx_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_core::sc_time& d);
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
  uint64_t m_arrival_lead_ps = 0;  // the feed's latency, kept at hand: every promise asks
  void discard(tlm::tlm_generic_payload& gp);
  sc_core::sc_event m_arrived;
};

}  // namespace p2psim::transport
