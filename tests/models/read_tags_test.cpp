// Read bandwidth is bounded by what can be in flight: outstanding tags x request size /
// round trip, until the link's read limit (docs/design.md, "PCIe timing"). Seven pairs in one
// simulation, identical but for the DMA engine's tag count.
#include <catch2/catch.hpp>

#include "models/pcie/link_timing.h"
#include "tests/models/harness.h"

TEST_CASE("read bandwidth rises with tags until the link limit", "[bandwidth][tags]") {
  auto r = p2psim::test::run_scenario("tests/data/models/tag_ladder_scenario.yaml");
  const double mrrs = 512;
  // Idle round trip of one MRRS read: first request out to last completion in.
  double rtt_ns = 0;
  for (const auto& l : r.latency)
    if (l.src == "nic1") rtt_ns = l.ns;
  REQUIRE(rtt_ns > 0);
  // Completions come back at the GPU's MPS (256 B): the read limit of a Gen3 x16 link.
  double link_limit = p2psim::pcie::analytic_read_gbs(3, 16, 256, 1ull << 30, 256);
  double previous = 0;
  for (int tags : {1, 2, 4, 8, 16, 32, 64}) {
    const auto& b = p2psim::test::transfer(r, "read" + std::to_string(tags));
    double bound = std::min(link_limit, tags * mrrs / rtt_ns);
    INFO(tags << " tags: " << b.gbps << " GB/s, bound " << bound << " GB/s (round trip " << rtt_ns
              << " ns)");
    CHECK(b.mismatched_bytes == 0);
    CHECK(b.gbps <= bound * 1.02);
    if (tags * mrrs / rtt_ns < 0.8 * link_limit) {
      CHECK(b.gbps == Approx(bound).epsilon(0.05));  // tag-bound: linear in tags
      CHECK(b.gbps > previous * 1.9);                // doubling tags doubles bandwidth
    } else if (tags * mrrs / rtt_ns > 1.5 * link_limit) {
      CHECK(b.gbps == Approx(link_limit).epsilon(0.02));  // link-bound
    }
    CHECK(b.gbps >= previous);
    previous = b.gbps;
  }
}
