// Link arithmetic: raw rates, per-TLP overheads, DLLP limits and the analytic bandwidth model
// (docs/design.md, "PCIe timing" and "Calibration figures", after pcie-bench pcie-model).
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>

#include "models/pcie/link_timing.h"

using namespace p2psim::pcie;

namespace {

constexpr uint64_t k_gib = uint64_t(1) << 30;

double round2(double v) {
  return std::round(v * 100.0) / 100.0;
}

tlp_header make(tlp_type type, uint64_t address, uint32_t length, bool ecrc = false) {
  tlp_header h;
  h.type = type;
  h.address = address;
  h.length = length;
  h.ecrc = ecrc;
  return h;
}

}  // namespace

TEST_CASE("link timing: raw x16 bandwidth per generation", "[pcie][link_timing]") {
  // docs/design.md, "PCIe timing": x16 raw 4.0 / 8.0 / 15.75 / 31.51 / 63.02 GB/s.
  CHECK(round2(raw_gbs(1, 16)) == Approx(4.00));
  CHECK(round2(raw_gbs(2, 16)) == Approx(8.00));
  CHECK(round2(raw_gbs(3, 16)) == Approx(15.75));
  CHECK(round2(raw_gbs(4, 16)) == Approx(31.51));
  CHECK(round2(raw_gbs(5, 16)) == Approx(63.02));
  // Scales linearly with the lane count: Gen3 x1 is 8 GT/s * 128/130 / 8 bits.
  CHECK(raw_gbs(3, 1) == Approx(8.0 * 128.0 / 130.0 / 8.0));
  CHECK(raw_gbs(4, 8) == Approx(raw_gbs(4, 16) / 2));
  CHECK(raw_gbs(2, 12) == Approx(6.0));
}

TEST_CASE("link timing: transfer rates and encodings", "[pcie][link_timing]") {
  // docs/design.md, "PCIe timing": 2.5 / 5 GT/s with 8b/10b; 8 / 16 / 32 GT/s with 128b/130b.
  CHECK(transfer_rate_gts(1) == 2.5);
  CHECK(transfer_rate_gts(2) == 5.0);
  CHECK(transfer_rate_gts(3) == 8.0);
  CHECK(transfer_rate_gts(4) == 16.0);
  CHECK(transfer_rate_gts(5) == 32.0);
  CHECK(encoding_efficiency(1) == Approx(0.8));
  CHECK(encoding_efficiency(2) == Approx(0.8));
  for (int gen = 3; gen <= 5; ++gen) CHECK(encoding_efficiency(gen) == Approx(128.0 / 130.0));
}

TEST_CASE("link timing: valid generations and widths", "[pcie][link_timing]") {
  CHECK_FALSE(valid_gen(0));
  for (int gen = 1; gen <= 5; ++gen) CHECK(valid_gen(gen));
  CHECK_FALSE(valid_gen(6));
  for (int w : {1, 2, 4, 8, 12, 16, 32}) CHECK(valid_width(w));
  for (int w : {0, 3, 6, 24, 64}) CHECK_FALSE(valid_width(w));
}

TEST_CASE("link timing: header sizes", "[pcie][link_timing]") {
  // docs/design.md, "PCIe timing": 12-byte (3DW) or 16-byte (4DW, 64-bit address) headers;
  // completions are always 3DW.
  CHECK(header_bytes(tlp_type::mwr, false) == 12);
  CHECK(header_bytes(tlp_type::mwr, true) == 16);
  CHECK(header_bytes(tlp_type::mrd, false) == 12);
  CHECK(header_bytes(tlp_type::mrd, true) == 16);
  CHECK(header_bytes(tlp_type::cpl, true) == 12);
  CHECK(header_bytes(tlp_type::cpld, false) == 12);
  CHECK(header_bytes(tlp_type::cpld, true) == 12);
}

TEST_CASE("link timing: bytes on the wire", "[pcie][link_timing]") {
  // docs/design.md, "PCIe timing": MWr64 and MRd64 cost 24 bytes of overhead, MWr32 and CplD 20;
  // ECRC adds 4.
  const uint64_t hi = uint64_t(1) << 40;
  CHECK(wire_bytes(make(tlp_type::mwr, hi, 256)) == 256 + 24);
  CHECK(wire_bytes(make(tlp_type::mwr, 0x1000, 256)) == 256 + 20);
  CHECK(wire_bytes(make(tlp_type::cpld, 0, 64)) == 64 + 20);
  CHECK(wire_bytes(make(tlp_type::cpld, hi, 64)) == 64 + 20);
  // A read request carries no payload, whatever length it asks for.
  CHECK(wire_bytes(make(tlp_type::mrd, hi, 4096)) == 24);
  CHECK(wire_bytes(make(tlp_type::mrd, 0x1000, 4096)) == 20);
  CHECK(wire_bytes(make(tlp_type::cpl, 0, 0)) == 20);
  CHECK(wire_bytes(make(tlp_type::mwr, hi, 128, true)) == 128 + 28);
  CHECK(wire_bytes(make(tlp_type::cpld, 0, 128, true)) == 128 + 24);
  // The 64-bit header starts above 4 GiB.
  CHECK(wire_bytes(make(tlp_type::mwr, 0xFFFFFFFFull, 4)) == 4 + 20);
  CHECK(wire_bytes(make(tlp_type::mwr, 0x100000000ull, 4)) == 4 + 24);
}

TEST_CASE("link timing: spec ACK and UpdateFC limits", "[pcie][link_timing]") {
  // PCIe Base Spec 5.0 tables 3-7..3-9 (ACK) and 2-46..2-48 (UpdateFC), as in pcie-model.
  CHECK(spec_ack_limit(1, 16, 128) == 48);
  CHECK(spec_ack_limit(1, 1, 4096) == 4143);
  CHECK(spec_ack_limit(2, 16, 256) == 123);
  CHECK(spec_ack_limit(3, 16, 256) == 168);
  CHECK(spec_ack_limit(3, 8, 512) == 182);
  CHECK(spec_ack_limit(3, 12, 512) == 182);  // x12 uses the x8 row
  CHECK(spec_ack_limit(4, 16, 512) == 182);  // Gen3..5 share one table
  CHECK(spec_ack_limit(5, 32, 4096) == 372);
  CHECK(spec_fc_limit(3, 16, 128) == 144);
  CHECK(spec_fc_limit(5, 4, 1024) == 378);
  // The two Gen1/Gen2 x32 cells where the UpdateFC table differs from the ACK table.
  CHECK(spec_ack_limit(1, 32, 2048) == 148);
  CHECK(spec_fc_limit(1, 32, 2048) == 248);
  CHECK(spec_ack_limit(2, 32, 4096) == 237);
  CHECK(spec_fc_limit(2, 32, 4096) == 327);
}

TEST_CASE("link timing: TLP-layer bandwidth", "[pcie][link_timing]") {
  // docs/design.md, "PCIe timing": raw * (1 - 8/AckLimit - 8/FCLimit - 4/1538).
  CHECK(tlp_layer_gbs(3, 16, 256) ==
        Approx(raw_gbs(3, 16) * (1 - 8.0 / 168 - 8.0 / 168 - 4.0 / 1538)));
  CHECK(tlp_layer_gbs(4, 16, 1000, 2000) ==
        Approx(raw_gbs(4, 16) * (1 - 8.0 / 1000 - 8.0 / 2000 - 4.0 / 1538)));
  CHECK(tlp_layer_gbs(5, 16, 256) == Approx(tlp_layer_gbs(5, 16, 168, 168)));
}

TEST_CASE("link timing: analytic limits match the pcie-model table", "[pcie][link_timing]") {
  // docs/design.md, "Calibration figures": x16 GB/s; MWr with 64-bit headers at MPS
  // 128/256/512; MRd at MPS 256 with CplD of MPS size and of 64 B (RCB split).
  struct row {
    int gen;
    double raw, mwr128, mwr256, mwr512, mrd_mps, mrd_64;  // mrd_64 < 0: not tabulated
  };
  const row rows[] = {
      {1, 4.00, 2.24, 2.83, 3.10, 2.88, -1},         {2, 8.00, 5.63, 6.34, 6.73, 6.44, -1},
      {3, 15.75, 11.76, 12.99, 13.69, 13.18, 10.83}, {4, 31.51, 23.52, 25.99, 27.37, 26.37, 21.66},
      {5, 63.02, 47.03, 51.98, 54.75, 52.73, 43.31},
  };
  const auto near = [](double v) { return Approx(v).margin(0.01); };
  for (const row& r : rows) {
    INFO("Gen" << r.gen << " x16");
    CHECK(raw_gbs(r.gen, 16) == near(r.raw));
    CHECK(analytic_write_gbs(r.gen, 16, 128, k_gib) == near(r.mwr128));
    CHECK(analytic_write_gbs(r.gen, 16, 256, k_gib) == near(r.mwr256));
    CHECK(analytic_write_gbs(r.gen, 16, 512, k_gib) == near(r.mwr512));
    CHECK(analytic_read_gbs(r.gen, 16, 256, k_gib, 256) == near(r.mrd_mps));
    if (r.mrd_64 > 0) CHECK(analytic_read_gbs(r.gen, 16, 256, k_gib, 64) == near(r.mrd_64));
  }
}

TEST_CASE("link timing: analytic write arithmetic", "[pcie][link_timing]") {
  // docs/design.md, "PCIe timing": N * TLP_bw / (N + ceil(N/MPS) * hdr); hdr 24 (MWr64) or 20
  // (MWr32).
  const double tlp = tlp_layer_gbs(3, 16, 256);
  CHECK(analytic_write_gbs(3, 16, 256, 256) == Approx(tlp * 256 / (256 + 24)));
  CHECK(analytic_write_gbs(3, 16, 256, 256, false) == Approx(tlp * 256 / (256 + 20)));
  // 257 bytes need two TLPs.
  CHECK(analytic_write_gbs(3, 16, 256, 257) == Approx(tlp * 257 / (257 + 2 * 24)));
  CHECK(analytic_read_gbs(3, 16, 256, 1024, 64) == Approx(tlp * 1024 / (1024 + 16 * 20)));
}

TEST_CASE("link timing: invalid parameters throw", "[pcie][link_timing]") {
  CHECK_THROWS_AS(transfer_rate_gts(0), std::invalid_argument);
  CHECK_THROWS_AS(transfer_rate_gts(6), std::invalid_argument);
  CHECK_THROWS_AS(raw_gbs(0, 16), std::invalid_argument);
  CHECK_THROWS_AS(raw_gbs(6, 16), std::invalid_argument);
  CHECK_THROWS_AS(raw_gbs(3, 0), std::invalid_argument);
  CHECK_THROWS_AS(raw_gbs(3, 3), std::invalid_argument);
  CHECK_THROWS_AS(raw_gbs(3, 64), std::invalid_argument);
  CHECK_THROWS_AS(spec_ack_limit(0, 16, 256), std::invalid_argument);
  CHECK_THROWS_AS(spec_ack_limit(6, 16, 256), std::invalid_argument);
  CHECK_THROWS_AS(spec_ack_limit(3, 5, 256), std::invalid_argument);
  CHECK_THROWS_AS(spec_ack_limit(3, 16, 64), std::invalid_argument);
  CHECK_THROWS_AS(spec_ack_limit(3, 16, 300), std::invalid_argument);
  CHECK_THROWS_AS(spec_ack_limit(3, 16, 8192), std::invalid_argument);
  CHECK_THROWS_AS(spec_fc_limit(7, 16, 256), std::invalid_argument);
  CHECK_THROWS_AS(spec_fc_limit(3, 16, 100), std::invalid_argument);
  CHECK_THROWS_AS(tlp_layer_gbs(3, 16, 96), std::invalid_argument);
  CHECK_THROWS_AS(analytic_write_gbs(3, 16, 200, k_gib), std::invalid_argument);
  CHECK_THROWS_AS(analytic_write_gbs(9, 16, 256, k_gib), std::invalid_argument);
  CHECK_THROWS_AS(analytic_read_gbs(3, 7, 256, k_gib, 64), std::invalid_argument);
}
