#include "models/pcie/link_timing.h"

#include <array>
#include <cmath>
#include <stdexcept>

namespace p2psim::pcie {
namespace {

// Rows: x1, x2, x4, x8, x16, x32. Columns: MPS 128, 256, 512, 1024, 2048, 4096.
// Bytes between DLLPs. Gen3, Gen4 and Gen5 share one table in the spec.
using limit_table = std::array<std::array<uint16_t, 6>, 6>;

constexpr limit_table ack_gen1 = {{{237, 416, 559, 1071, 2095, 4143},
                                   {128, 217, 289, 545, 1057, 2081},
                                   {73, 118, 154, 282, 538, 1050},
                                   {67, 107, 86, 150, 278, 534},
                                   {48, 72, 86, 150, 278, 534},
                                   {33, 45, 52, 84, 148, 276}}};
constexpr limit_table ack_gen2 = {{{288, 467, 610, 1122, 2146, 4194},
                                   {179, 268, 340, 596, 1108, 2132},
                                   {124, 169, 205, 333, 589, 1101},
                                   {118, 158, 137, 201, 329, 585},
                                   {99, 123, 137, 201, 329, 585},
                                   {84, 96, 103, 135, 199, 237}}};
constexpr limit_table ack_gen3 = {{{333, 512, 655, 1167, 2191, 4239},
                                   {224, 313, 385, 641, 1153, 2177},
                                   {169, 214, 250, 378, 634, 1146},
                                   {163, 203, 182, 246, 374, 630},
                                   {144, 168, 182, 246, 374, 630},
                                   {129, 141, 148, 180, 244, 372}}};
// The UpdateFC tables equal the ACK tables except for two Gen1/Gen2 x32 entries.
constexpr limit_table fc_gen1 = {{{237, 416, 559, 1071, 2095, 4143},
                                  {128, 217, 289, 545, 1057, 2081},
                                  {73, 118, 154, 282, 538, 1050},
                                  {67, 107, 86, 150, 278, 534},
                                  {48, 72, 86, 150, 278, 534},
                                  {33, 45, 52, 84, 248, 276}}};
constexpr limit_table fc_gen2 = {{{288, 467, 610, 1122, 2146, 4194},
                                  {179, 268, 340, 596, 1108, 2132},
                                  {124, 169, 205, 333, 589, 1101},
                                  {118, 158, 137, 201, 329, 585},
                                  {99, 123, 137, 201, 329, 585},
                                  {84, 96, 103, 135, 199, 327}}};

int width_row(int width) {
  switch (width) {
    case 1:
      return 0;
    case 2:
      return 1;
    case 4:
      return 2;
    case 8:
      return 3;
    case 12:
      return 3;  // the tables used here have no x12 row: x8's (more DLLPs) stands in
    case 16:
      return 4;
    case 32:
      return 5;
  }
  throw std::invalid_argument("PCIe link width must be 1, 2, 4, 8, 12, 16 or 32");
}

int mps_column(uint32_t mps) {
  for (int i = 0; i < 6; ++i)
    if (mps == (128u << i)) return i;
  throw std::invalid_argument("MPS must be a power of two from 128 to 4096 bytes");
}

uint32_t lookup(const limit_table& t, int width, uint32_t mps) {
  return t[width_row(width)][mps_column(mps)];
}

}  // namespace

bool valid_gen(int gen) {
  return gen >= 1 && gen <= 5;
}
bool valid_width(int w) {
  return w == 1 || w == 2 || w == 4 || w == 8 || w == 12 || w == 16 || w == 32;
}

double transfer_rate_gts(int gen) {
  switch (gen) {
    case 1:
      return 2.5;
    case 2:
      return 5.0;
    case 3:
      return 8.0;
    case 4:
      return 16.0;
    case 5:
      return 32.0;
  }
  throw std::invalid_argument("PCIe generation must be 1 to 5");
}

double encoding_efficiency(int gen) {
  return gen <= 2 ? 8.0 / 10.0 : 128.0 / 130.0;
}

double raw_gbs(int gen, int width) {
  if (!valid_width(width)) width_row(width);  // throws with the message
  return transfer_rate_gts(gen) * encoding_efficiency(gen) * width / 8.0;
}

uint32_t spec_ack_limit(int gen, int width, uint32_t mps) {
  const limit_table& t = gen == 1 ? ack_gen1 : gen == 2 ? ack_gen2 : ack_gen3;
  transfer_rate_gts(gen);  // validates gen
  return lookup(t, width, mps);
}

uint32_t spec_fc_limit(int gen, int width, uint32_t mps) {
  const limit_table& t = gen == 1 ? fc_gen1 : gen == 2 ? fc_gen2 : ack_gen3;
  transfer_rate_gts(gen);
  return lookup(t, width, mps);
}

double tlp_layer_gbs(int gen, int width, uint32_t ack_limit, uint32_t fc_limit) {
  double overhead = double(dllp_bytes) / ack_limit + double(dllp_bytes) / fc_limit + skip_fraction;
  return raw_gbs(gen, width) * (1.0 - overhead);
}

double tlp_layer_gbs(int gen, int width, uint32_t mps) {
  return tlp_layer_gbs(gen, width, spec_ack_limit(gen, width, mps), spec_fc_limit(gen, width, mps));
}

double analytic_write_gbs(int gen, int width, uint32_t mps, uint64_t bytes, bool addr64) {
  double tlps = std::ceil(double(bytes) / mps);
  double hdr = framing_bytes + header_bytes(tlp_type::mwr, addr64);
  return tlp_layer_gbs(gen, width, mps) * double(bytes) / (double(bytes) + tlps * hdr);
}

double analytic_read_gbs(int gen, int width, uint32_t mps, uint64_t bytes, uint32_t cpl_bytes) {
  double tlps = std::ceil(double(bytes) / cpl_bytes);
  double hdr = framing_bytes + header_bytes(tlp_type::cpld, false);
  return tlp_layer_gbs(gen, width, mps) * double(bytes) / (double(bytes) + tlps * hdr);
}

const char* to_string(tlp_type t) {
  switch (t) {
    case tlp_type::mwr:
      return "MWr";
    case tlp_type::mrd:
      return "MRd";
    case tlp_type::cpl:
      return "Cpl";
    case tlp_type::cpld:
      return "CplD";
    case tlp_type::msg:
      return "Msg";
    case tlp_type::fetch_add:
      return "FetchAdd";
    case tlp_type::swap:
      return "Swap";
    case tlp_type::cas:
      return "CAS";
  }
  return "?";
}

const char* to_string(cpl_status s) {
  switch (s) {
    case cpl_status::sc:
      return "SC";
    case cpl_status::ur:
      return "UR";
    case cpl_status::ca:
      return "CA";
  }
  return "?";
}

}  // namespace p2psim::pcie
