// The floor of a TLM-2.0 AT simulation: the cheapest simulation that still makes a given
// number of transactions take a given total number of timed hops (a case's TLPs and TLP-hops,
// exactly: where that is not a whole number of hops per transaction, some take one hop
// fewer, spread evenly). A source sends pooled
// tlm_generic_payloads at a fixed interval through a chain of forwarders, each of which holds
// a transaction for one hop delay (a FIFO and one timed event per hop) and hands it on with
// nb_transport_fw BEGIN_REQ; a sink releases it to the pool. The hop delay sets how many are
// in flight at once (the working set a model's cost grows with). Nothing decides
// anything, so a model's hop rate divided by the floor's says how much of its cost is its own
// logic rather than the SystemC kernel's. SystemC elaborates once per process: one floor per
// process.
#pragma once

#include <cstdint>

#include "sim/bench/bench.h"

namespace p2psim::bench {

// `hops` from `transactions` to 64 times as many; `in_flight` transactions alive at once on
// average (0: 20 ns hops, about three).
floor_figures run_floor(uint64_t transactions, uint64_t hops, uint64_t in_flight = 0);

}  // namespace p2psim::bench
