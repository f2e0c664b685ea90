// Lookahead: how a link starts a TLP ahead of time, on its sender's promise.
//
// Vocabulary, used by models/link, the components that own ports and their tests:
//   start ahead   a link hands a queued TLP to the receiver (and tells its sender when it
//                 leaves) before its start time, because that start is already certain; the
//                 link then needs no wake-up to start it (link_channel::start_ahead).
//   ready         a TLP handed to a link is ready when its sender's latency has passed (the
//                 delay of BEGIN_REQ); it cannot start sooner.
//   promise       a sender's word that every TLP it will still hand to a port, from now on,
//                 is ready no sooner than a time `t` (promises_ready_no_sooner_than), or a
//                 link's word that every TLP not on its wire yet arrives no sooner than `t`
//                 (link_channel::promises_arrival_no_sooner_than, asked through the
//                 receiving port: pcie_port::feed_promises_arrival_no_sooner_than).
//   scope         which TLPs a promise is about: all, or completions only.
//   lead          how long from now a TLP not on a link's wire yet takes at least to arrive:
//                 the link's propagation latency (pcie_port::feed_lead_ps).
//
// The rules:
//   1. A link starts a TLP ahead only for a sender that allows it (allows_start_ahead): its
//      sent() is then told of a departure still to come (after_ps > 0) and must act on it
//      only then (a switch or root complex frees the ingress buffer with that delay). A
//      requester acts on a departure at once, so it does not allow it.
//   2. The TLP is the oldest queued and has its credits by the time the serializer frees
//      (credits only come back). If it is ready by then, it starts then: no start happens
//      while the serializer is busy, and the arbiter takes the oldest eligible TLP, which a
//      TLP handed over later is not. If it is ready only later, the serializer idles until
//      then, so no other queued TLP may be ready sooner, and the sender must promise that
//      none it still hands over is.
//   3. A promise is built only from what is certain: the TLPs on the wire toward the
//      sender's ports (pcie_port::arriving), each port's lead, TLPs the sender itself holds
//      with known release times, and, for what goes on at once when it arrives, the promise
//      of the link that brings it (which may ask its own sender in turn). "No" is always
//      safe; a chain of promises that could go round in a circle must answer "no".
//   4. The link checks every promise it relied on: a TLP handed over ready before a
//      promised time is a model error (std::logic_error), not a silent reordering.
//   5. A TLP started ahead counts in the link's stats when its start time comes; if the link
//      goes down before then, it counts as dropped instead, as if it had stayed queued.
//   6. Not with a choice source (pcie::order_policy::choices): which of several eligible
//      TLPs goes is decided when it goes.
//
// docs/architecture.md ("A link starts a TLP when its start is certain") says why;
// tests/models/lookahead_test.cpp tests each rule on its own.
#pragma once

#include <cstdint>

namespace p2psim::transport {

enum class promise_scope { all, completions };

// What a component that hands TLPs to links (through its ports) says about them. Both
// answers default to the safe one.
class lookahead_sender {
 public:
  virtual ~lookahead_sender() = default;
  // Rule 1: whether a link may start this component's TLPs ahead.
  virtual bool allows_start_ahead() const { return false; }
  // Rule 3, for a component that allows starting ahead: whether every TLP (of `which`) it
  // will still hand to `port` is ready no sooner than `t`.
  virtual bool promises_ready_no_sooner_than(int port, uint64_t t, promise_scope which) const {
    (void)port, (void)t, (void)which;
    return false;
  }
};

}  // namespace p2psim::transport
