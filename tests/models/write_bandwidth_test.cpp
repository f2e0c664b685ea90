// Posted-write P2P bandwidth on the switch-only topology (topologies/switch_only.yaml)
// against the analytic limit of docs/design.md, "PCIe timing" (pcie-bench's pcie-model): raw
// rate less ACK / UpdateFC DLLPs and SKIPs, then MWr64 framing and header per MPS bytes. One
// case per process.
#include <catch2/catch.hpp>
#include <string>

#include "models/pcie/link_timing.h"
#include "tests/models/harness.h"

namespace {

void check_write(int gen, uint32_t mps) {
  std::string g = std::to_string(gen), m = std::to_string(mps) + "B";
  auto r = p2psim::test::run_scenario(
      "tests/data/models/write_read.yaml",
      {"socket.cpu0.platform=epyc_turin",  // a root complex that trains Gen4 links
       "link.sw0.gen=" + g, "link.gpu0.gen=" + g, "link.nic0.gen=" + g, "pcie.mps=" + m,
       "transfers.read.size=4KiB"});
  const auto& w = p2psim::test::transfer(r, "write");
  double limit = p2psim::pcie::analytic_write_gbs(gen, 16, mps, w.bytes);
  INFO("Gen" << gen << " x16 MPS " << mps << ": simulated " << w.gbps << " GB/s, analytic " << limit
             << " GB/s");
  CHECK(w.mismatched_bytes == 0);
  CHECK(w.failed_bytes == 0);
  CHECK(w.gbps == Approx(limit).epsilon(0.02));
}

}  // namespace

TEST_CASE("posted write bandwidth Gen3 x16 MPS 128 within 2% of analytic", "[bandwidth]") {
  check_write(3, 128);
}
TEST_CASE("posted write bandwidth Gen3 x16 MPS 256 within 2% of analytic", "[bandwidth]") {
  check_write(3, 256);
}
TEST_CASE("posted write bandwidth Gen3 x16 MPS 512 within 2% of analytic", "[bandwidth]") {
  check_write(3, 512);
}
TEST_CASE("posted write bandwidth Gen4 x16 MPS 128 within 2% of analytic", "[bandwidth]") {
  check_write(4, 128);
}
TEST_CASE("posted write bandwidth Gen4 x16 MPS 256 within 2% of analytic", "[bandwidth]") {
  check_write(4, 256);
}
TEST_CASE("posted write bandwidth Gen4 x16 MPS 512 within 2% of analytic", "[bandwidth]") {
  check_write(4, 512);
}

// ECRC adds a 4-byte digest to every TLP (docs/design.md, "PCIe timing": "ECRC, if enabled: 4
// more").
TEST_CASE("posted write bandwidth with ECRC pays 4 more bytes per TLP", "[bandwidth][ecrc]") {
  auto r = p2psim::test::run_scenario("tests/data/models/write_read.yaml",
                                      {"link.sw0.ecrc=true", "link.gpu0.ecrc=true",
                                       "link.nic0.ecrc=true", "transfers.read.size=4KiB"});
  const auto& w = p2psim::test::transfer(r, "write");
  double tlps = double(w.bytes) / 256;
  double expected = p2psim::pcie::tlp_layer_gbs(3, 16, 256) * double(w.bytes) /
                    (double(w.bytes) + tlps * (24 + 4));
  INFO("simulated " << w.gbps << " GB/s, expected " << expected);
  CHECK(w.gbps == Approx(expected).epsilon(0.02));
  CHECK(w.gbps < p2psim::pcie::analytic_write_gbs(3, 16, 256, w.bytes) * 0.995);
}
