// PCIe link arithmetic: raw rates, encodings, per-TLP overheads, DLLP rates and the analytic
// bandwidth limits of docs/design.md, "PCIe timing" (after pcie-bench's pcie-model,
// Neugebauer et al., SIGCOMM 2018). Pure functions; the SystemC link and the tests both use them.
#pragma once

#include <cstdint>

#include "models/pcie/tlp.h"

namespace p2psim::pcie {

inline constexpr uint32_t framing_bytes = 8;  // STP/END framing + sequence number + LCRC
inline constexpr uint32_t dllp_bytes = 8;     // one ACK or UpdateFC DLLP on the wire
// SKIP ordered sets (clock compensation): 4 symbols of every 1538 symbol times.
inline constexpr uint32_t skip_symbols = 4;
inline constexpr uint32_t skip_interval_symbols = 1538;
inline constexpr double skip_fraction = double(skip_symbols) / skip_interval_symbols;

bool valid_gen(int gen);
bool valid_width(int width);

// GT/s per lane: 2.5, 5, 8, 16, 32.
double transfer_rate_gts(int gen);
// Encoding efficiency: 8/10 (Gen1, Gen2) or 128/130 (Gen3..5).
double encoding_efficiency(int gen);
// Raw bandwidth of one direction in GB/s (1e9 bytes): lanes * GT/s * encoding / 8.
double raw_gbs(int gen, int width);

// Header bytes: 12 (3DW) or 16 (4DW); completions always 3DW.
// Inline: both run for every TLP on every link.
inline uint32_t header_bytes(tlp_type type, bool addr64) {
  switch (type) {
    case tlp_type::mwr:
    case tlp_type::mrd:
    case tlp_type::fetch_add:
    case tlp_type::swap:
    case tlp_type::cas:
      return addr64 ? 16 : 12;
    case tlp_type::msg:
      return 16;
    default:
      return 12;
  }
}
// Bytes one TLP occupies on the wire: framing + header + payload + optional ECRC.
inline uint32_t wire_bytes(const tlp_header& h) {
  const uint32_t payload = has_data(h.type) ? h.length : 0;
  return framing_bytes + header_bytes(h.type, h.addr64()) + payload + (h.ecrc ? 4 : 0);
}

// The spec's recommended ACK and UpdateFC transmission limits, in bytes between DLLPs
// (PCIe Base Spec 5.0 tables 3-7..3-9 and 2-46..2-48, as tabulated by pcie-model).
uint32_t spec_ack_limit(int gen, int width, uint32_t mps);
uint32_t spec_fc_limit(int gen, int width, uint32_t mps);

// Bandwidth left for TLPs once ACK, UpdateFC DLLPs and SKIPs are paid for, GB/s.
double tlp_layer_gbs(int gen, int width, uint32_t ack_limit, uint32_t fc_limit);
double tlp_layer_gbs(int gen, int width, uint32_t mps);  // with the spec's limits

// Analytic limits for a transfer of `bytes` (GB/s):
// posted writes split at MPS with `hdr` bytes of per-TLP overhead (24 for MWr64).
double analytic_write_gbs(int gen, int width, uint32_t mps, uint64_t bytes, bool addr64 = true);
// reads whose completions carry `cpl_bytes` each (MPS, or the RCB when the completer splits).
double analytic_read_gbs(int gen, int width, uint32_t mps, uint64_t bytes, uint32_t cpl_bytes);

}  // namespace p2psim::pcie
