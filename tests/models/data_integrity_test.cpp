// Every byte a DMA moves arrives intact: the runner fills the source with a pattern and the
// destination with its complement, and compares them after the transfer.
#include <catch2/catch.hpp>

#include "tests/models/harness.h"

TEST_CASE("every byte arrives intact on every kind of transfer", "[integrity]") {
  auto r = p2psim::test::run_scenario("tests/data/models/every_path.yaml");
  REQUIRE(r.bandwidth.size() == 7);
  for (const auto& b : r.bandwidth) {
    INFO(b.transfer);
    CHECK(b.mismatched_bytes == 0);
    CHECK(b.failed_bytes == 0);
    CHECK(b.gbps > 0);
  }
  CHECK(p2psim::test::transfer(r, "nic_writes_gpu").bytes == 1000000);
  CHECK(p2psim::test::transfer(r, "gpu_reads_nic").bytes == 777777);
  CHECK(p2psim::test::transfer(r, "gpu_writes_host").bytes == 2 * 3 * 1024 * 1024);
  CHECK(p2psim::test::transfer(r, "nic_reads_host").bytes == 123457);
  CHECK(r.errors.empty());
}
