// The transaction layer packet, with fields named as in the PCIe Base Specification.
// One TLP travels as one tlm_generic_payload carrying a tlp_ext; the payload bytes are the
// generic payload's data array, so they reach the target's backing store for real.
#pragma once

#include <cstdint>

namespace p2psim::pcie {

enum class tlp_type : uint8_t {
  mwr,   // memory write (posted)
  mrd,   // memory read request (non-posted, no data)
  cpl,   // completion without data (e.g. an Unsupported Request answer)
  cpld,  // completion with data
  msg,   // message (posted)
  // AtomicOps (PCIe Base Spec 6.15): non-posted requests with data, answered by a CplD with
  // the target's old value. The operand is 4 or 8 bytes (CAS: compare then swap, 8 or 16).
  fetch_add,
  swap,
  cas,
};

// Flow-control class of a TLP: which credit pool it draws from (PCIe Base Spec 2.6.1).
enum class fc_class : uint8_t { posted = 0, non_posted = 1, completion = 2 };
inline constexpr int fc_class_count = 3;

enum class cpl_status : uint8_t { sc, ur, ca };  // Successful, Unsupported Request, Completer Abort

inline fc_class fc_class_of(tlp_type t) {
  switch (t) {
    case tlp_type::mwr:
    case tlp_type::msg:
      return fc_class::posted;
    case tlp_type::mrd:
    case tlp_type::fetch_add:
    case tlp_type::swap:
    case tlp_type::cas:
      return fc_class::non_posted;
    default:
      return fc_class::completion;
  }
}
inline bool is_atomic(tlp_type t) {
  return t == tlp_type::fetch_add || t == tlp_type::swap || t == tlp_type::cas;
}
inline bool is_completion(tlp_type t) {
  return t == tlp_type::cpl || t == tlp_type::cpld;
}
// A request the completer answers (a read or an AtomicOp): refusing it means a UR or CA
// completion, not a silent drop.
inline bool is_non_posted(tlp_type t) {
  return fc_class_of(t) == fc_class::non_posted;
}
inline bool has_data(tlp_type t) {
  return t == tlp_type::mwr || t == tlp_type::cpld || is_atomic(t);
}
// Bytes of data an AtomicOp's completion returns: the operand size (CAS carries two).
inline uint32_t atomic_result_bytes(tlp_type t, uint32_t length) {
  return t == tlp_type::cas ? length / 2 : length;
}
const char* to_string(tlp_type t);
const char* to_string(cpl_status s);

struct tlp_attrs {
  bool relaxed_ordering = false;   // RO
  bool id_based_ordering = false;  // IDO
  bool no_snoop = false;           // NS
  uint8_t traffic_class = 0;       // TC0..7
};

struct tlp_header {
  tlp_type type = tlp_type::mwr;
  uint64_t address = 0;       // requests: first byte addressed
  uint32_t length = 0;        // bytes of payload (MWr, CplD, AtomicOp) or requested (MRd)
  uint16_t requester_id = 0;  // bus:dev.fn of the requester (completions: of the original)
  uint16_t completer_id = 0;  // completions
  uint16_t tag = 0;           // up to 10 bits
  uint32_t byte_count = 0;    // completions: bytes still to come, including this one
  uint8_t lower_address = 0;  // completions: address[6:0] of the first byte
  cpl_status status = cpl_status::sc;
  tlp_attrs attrs;
  bool ecrc = false;                                       // TLP digest present
  bool addr64() const { return address > 0xFFFFFFFFull; }  // 4DW header for 64-bit addresses
};

// Simulation bookkeeping that travels with a TLP; not on the wire.
struct tlp_meta {
  uint64_t serial = 0;       // creation order, unique per run
  uint32_t stream = 0;       // which DMA stream it belongs to (for statistics)
  uint64_t last_ser_ps = 0;  // serialization time on the last link (cut-through switches)
  // Burst fidelity: that of the burst's last TLP there (its first TLP's is last_ser_ps).
  uint64_t tail_ser_ps = 0;
  // Burst fidelity: this transaction stands for `tlps` back-to-back TLPs of one kind whose
  // payloads add up to the header's length; a request burst's TLPs are at most `unit` bytes
  // each (MPS, MRRS or a root complex's re-emit size), its read completions answer each one.
  bool burst = false;
  uint32_t tlps = 1;
  uint32_t unit = 0;
  // Burst fidelity: the payloads of its first and last TLPs (they differ from the rest where
  // the transfer starts or ends unaligned): a link times the first TLP's arrival and the
  // last's end by them. 0 in a burst without data.
  uint32_t first_bytes = 0, last_bytes = 0;
  // Burst fidelity: a completion burst ends this many of the read requests it answers (their
  // last completions are in it): TLP by TLP each one's tag is free again as its last
  // completion comes in, evenly over the burst's lag.
  uint32_t requests_ended = 1;
  // Burst fidelity: when a completion burst's first TLP came in at the requester that took it
  // in (later, once the tags were back).
  uint64_t first_in_ps = 0;
  // Burst fidelity: how long after its first TLP the burst's last one is ready (at a sender)
  // or has arrived (at a receiver). Bursts move through the fabric pipelined, TLP by TLP
  // as it were: a forwarding component passes a burst on when its first TLP is in.
  uint64_t lag_ps = 0;
  // Burst fidelity: its last `tail_tlps` TLPs are the pieces of one TLP a root complex
  // re-emitted in smaller ones: they came in together, not spread over the lag like the rest,
  // and left the links they took `tail_spread_ps` apart, first to last. A slower link sends
  // them one after another once the first of them is in.
  uint32_t tail_tlps = 1;
  uint64_t tail_spread_ps = 0;
  // Burst fidelity: the first link a request burst takes tells its sender of the departure
  // when the burst's last TLP starts (TLP by TLP, the sender hands over its next TLP then),
  // or the link sent the first TLPs ahead of the rest (link_channel::start_burst()); either way the
  // burst began to leave at `first_start_ps`.
  bool told_at_last_start = false;
  // Burst fidelity: a forwarded burst that a link cut (link_channel::start_burst()): its sender, a
  // switch or root complex, was told of its departure when its first TLP started, as for a
  // burst not cut, so the rest queued again does not tell it a second time (its ingress
  // buffer, and the credits the whole burst took, would be freed twice).
  bool sender_told = false;
  uint64_t first_start_ps = 0;
  // Its sender is told of the departure late; the first time, it began to leave at `at`.
  void tell_at_last_start(uint64_t at) {
    if (told_at_last_start) return;
    told_at_last_start = true;
    first_start_ps = at;
  }
  // Burst fidelity: how long after its first TLP its last one started on the link it left by
  // last (set as it leaves; 0 for a TLP).
  uint64_t span_ps = 0;
  // Burst fidelity: a switch or root complex frees a burst's ingress buffer TLP by TLP as its
  // TLPs leave, the last this long after the first (0: all at once); the link it came by
  // gets the credits back at that pace.
  uint64_t frees_over_ps = 0;
  // Burst fidelity: on some link it took, the burst started without credits for all of its
  // TLPs (double buffering, docs/architecture.md "Flow control"): TLP by TLP its later TLPs
  // would have waited for the receiver to free room, and come in further apart than they do.
  bool ran_ahead_of_credits = false;
};

}  // namespace p2psim::pcie
