// Programs of simulated processes driving the CUDA API, the nv-p2p driver model and the
// third-party driver over the timed fabric (GPUDirect RDMA 13.3, 5.1-5.3, 6.2-6.5).
#include <catch2/catch.hpp>

#include "tests/models/harness.h"

using p2psim::test::program_dma;
using p2psim::test::run_scenario;

namespace {
double step_end_ns(const p2psim::core::run_result& r, const std::string& call) {
  for (const auto& s : r.program["steps"])
    if (s["call"] == call) return s["end_ns"];
  return -1;
}
}  // namespace

TEST_CASE("6.4: freeing memory under an in-flight DMA waits for it, and nothing lands after",
          "[program][callback]") {
  auto r = run_scenario("tests/data/scenarios/free_during_dma.yaml");
  INFO(r.program.dump(1));
  const auto& w = program_dma(r, "w");
  CHECK(w["landed_bytes"] == 8u << 20);
  CHECK(w["failed_bytes"] == 0);
  CHECK(r.program["peer_driver"]["callbacks_that_waited"] == 1);
  CHECK(r.program["driver"]["callbacks"] == 1);
  // The free returned only after the last byte had landed; BAR1 was unmapped after that, and
  // no write ever hit an unmapped page.
  CHECK(w["last_ns"].get<double>() <= step_end_ns(r, "cuMemFree"));
  CHECK(r.stats["devices"]["gpu0"]["bar1_unmapped_accesses"] == 0);
  CHECK(r.program["bar1"][0]["used_bytes"] == 32u << 20);  // just the reserved region again
  CHECK(r.errors.empty());
}

TEST_CASE("6.4: a driver that does not wait loses the rest of its DMA to unmapped BAR1",
          "[program][callback]") {
  auto r = run_scenario("tests/data/scenarios/free_during_dma.yaml",
                        {"peer_driver.wait_in_callback=false"});
  const auto& w = program_dma(r, "w");
  uint64_t landed = w["landed_bytes"], failed = w["failed_bytes"];
  INFO("landed " << landed << ", refused " << failed);
  CHECK(failed > 0);
  CHECK(landed > 0);
  CHECK(landed + failed == 8u << 20);
  // Every byte that came after the free was refused by the GPU (unmapped BAR1 pages): none
  // reached VRAM.
  CHECK(r.stats["devices"]["gpu0"]["bar1_unmapped_accesses"].get<uint64_t>() * 256 == failed);
  CHECK_FALSE(r.errors.empty());  // and the run reports it
}

TEST_CASE("5.1: with the registration cache each buffer is pinned once", "[program][regcache]") {
  auto r = run_scenario("scenarios/regcache.yaml");
  CHECK(r.program["driver"]["pins"] == 2);
  CHECK(r.program["regcache"]["hits"] == 22);
  CHECK(r.program["driver"]["pinning_ns"].get<double>() == Approx(2 * (20'000 + 64 * 2'000)));
  for (const auto& d : r.program["dma"]) {
    CHECK(d["mismatched_bytes"] == 0);
    CHECK(d["failed_bytes"] == 0);
  }
  CHECK(r.errors.empty());
}

TEST_CASE("5.1: without the cache every transfer pins and unpins", "[program][regcache]") {
  auto r = run_scenario("scenarios/regcache.yaml", {"peer_driver.regcache.enabled=false"});
  CHECK(r.program["driver"]["pins"] == 24);
  CHECK(r.program["driver"]["unpins"] == 24);
  // 24 pins of 16 pages (1 MiB) and 24 unpins.
  CHECK(r.program["driver"]["pinning_ns"].get<double>() ==
        Approx(24 * (20'000 + 16 * 2'000) + 24 * 10'000));
  for (const auto& d : r.program["dma"]) CHECK(d["mismatched_bytes"] == 0);
}

TEST_CASE("refused calls return what the real APIs return", "[program][misuse]") {
  auto r = run_scenario("tests/data/scenarios/driver_misuse.yaml");
  INFO(r.program["steps"].dump(1));
  for (const auto& s : r.program["steps"]) CHECK(s["ok"].get<bool>());
  CHECK(r.errors.empty());
  CHECK(r.program["driver"]["refused_calls"] == 1);        // -ENOMEM: BAR1 exhausted (guide 5.5)
  CHECK(r.program["driver"]["callbacks"] == 1);            // buf was still registered when freed
  CHECK(r.program["bar1"][0]["used_bytes"] == 32u << 20);  // all returned at the end
}

TEST_CASE(
    "4.6 and 5.4: behind a translating IOMMU the peer driver programs I/O virtual "
    "addresses",
    "[program][iommu]") {
  auto r = run_scenario("scenarios/regcache.yaml", {"socket.cpu0.iommu.mode=translating"});
  for (const auto& d : r.program["dma"]) {
    INFO(d["name"]);
    CHECK(d["failed_bytes"] == 0);
    CHECK(d["mismatched_bytes"] == 0);
  }
  const auto& io = r.stats["devices"]["nic0"]["iommu"];
  CHECK(io["translations"].get<uint64_t>() > 0);
  CHECK(io["faults"] == 0);
  CHECK(io["maps"].get<uint64_t>() >= 2);  // nvidia_p2p_dma_map_pages, one per pinned buffer
  CHECK(r.errors.empty());
}

TEST_CASE("CUDA copies run on the GPU copy engine over the fabric and return the right bytes",
          "[program][cuda]") {
  auto r = run_scenario("tests/data/scenarios/cuda_copies.yaml");
  INFO(r.program["steps"].dump(1));
  for (const auto& s : r.program["steps"]) CHECK(s["ok"].get<bool>());
  CHECK(r.errors.empty());  // every cuMemcpyDtoH read back what was put in, incl. the NIC's
  CHECK(r.program["cuda_copies"]["copies"] == 7);
  // With SYNC_MEMOPS the 4 MiB host-to-device copy is complete when the call returns (guide
  // 5.7), and it moved over Gen3 x16 (about 13 GB/s): it took that much simulated time.
  const auto& htod = r.program["steps"][5];
  REQUIRE(htod["call"] == "cuMemcpyHtoD");
  double us = (htod["end_ns"].get<double>() - htod["start_ns"].get<double>()) / 1000;
  CHECK(us > 4.0 * 1048576 / 14.0e3);  // no faster than the link allows
  CHECK(us < 4.0 * 1048576 / 5.0e3);
  CHECK(r.stats["devices"]["gpu0"]["requester"]["read_requests"].get<uint64_t>() > 0);
}

TEST_CASE("a copy between two GPUs is staged through host memory by both copy engines",
          "[program][cuda]") {
  auto r = run_scenario("tests/data/scenarios/cuda_copy_two_gpus.yaml");
  INFO(r.program["steps"].dump(1));
  for (const auto& s : r.program["steps"]) CHECK(s["ok"].get<bool>());
  CHECK(r.errors.empty());  // b read back what was copied into a
  CHECK(r.stats["devices"]["gpu0"]["requester"]["write_tlps"].get<uint64_t>() > 0);     // out
  CHECK(r.stats["devices"]["gpu1"]["requester"]["read_requests"].get<uint64_t>() > 0);  // in
}

TEST_CASE("a dma step's Relaxed Ordering attribute reaches the wire", "[program][ordering]") {
  // cuda_copies.yaml's NIC write of 2 MiB sets relaxed_ordering; the GPU's copies do not.
  auto r = run_scenario("tests/data/scenarios/cuda_copies.yaml");
  const auto& links = r.stats["links"];
  CHECK(links["nic0"]["upstream"]["relaxed_ordering_tlps"] == (2u << 20) / 256);  // every MWr
  CHECK(links["gpu0"]["upstream"]["relaxed_ordering_tlps"] == 0);
  for (const auto& d : r.program["dma"]) CHECK(d["mismatched_bytes"] == 0);
  CHECK(r.errors.empty());
}

TEST_CASE("5.7: an RDMA read right after cuMemcpyDtoD may see old data without SYNC_MEMOPS",
          "[program][visibility]") {
  auto r = run_scenario("tests/data/scenarios/dtod_then_rdma.yaml");
  const auto& rdma = program_dma(r, "rdma");
  INFO(r.program.dump(1));
  // The NIC read dst while the copy was still running: it got old bytes, not the copy's.
  CHECK(rdma["stale_bytes"].get<uint64_t>() > 0);
  CHECK(rdma["failed_bytes"] == 0);
}

TEST_CASE("5.7: with SYNC_MEMOPS the RDMA read after cuMemcpyDtoD never sees old data",
          "[program][visibility]") {
  auto r = run_scenario("tests/data/scenarios/dtod_then_rdma_sync.yaml");
  const auto& rdma = program_dma(r, "rdma");
  INFO(r.program.dump(1));
  CHECK(rdma["stale_bytes"] == 0);
  CHECK(rdma["mismatched_bytes"] == 0);
  CHECK(rdma["bytes"] == 64 * 1024);
}

TEST_CASE("5.2: each process has its own registration cache", "[program][regcache]") {
  auto r = run_scenario("tests/data/scenarios/two_process_caches.yaml");
  INFO(r.program.dump(1));
  for (const auto& s : r.program["steps"]) CHECK(s["ok"].get<bool>());
  CHECK(r.errors.empty());
  // Both buffers sit at the same virtual address, in different address spaces: one pin each,
  // and neither process's lookups ever reach the other's entry.
  CHECK(r.program["driver"]["pins"] == 2);
  CHECK(r.program["driver"]["refused_calls"] == 0);
  CHECK(r.program["regcache"]["processes"] == 2);
  CHECK(r.program["regcache"]["misses"] == 2);
  CHECK(r.program["regcache"]["hits"] == 7);
  CHECK(r.program["regcache"]["tag_invalidations"] == 0);
  CHECK(r.program["regcache"]["evictions"] == 0);
  CHECK(r.program["bar1"][0]["peak_pinned_bytes"] == 2 * (4u << 20));
  CHECK(r.program["bar1"][0]["peak_requested_bytes"] == 2 * (4u << 20));
}

TEST_CASE("a dma step's `every` starts its repetitions at that rate", "[program][rate]") {
  auto r = run_scenario("tests/data/scenarios/two_process_caches.yaml");
  const auto& paced = r.program["steps"][7];
  REQUIRE(paced["call"] == "dma");
  const double us = (paced["end_ns"].get<double>() - paced["start_ns"].get<double>()) / 1000;
  // The fourth 64 KiB write starts 150 us after the first and takes a few us itself (the
  // first, which pins the buffer for 74 us, runs late; the third waits for its turn again).
  CHECK(us > 150.0);
  CHECK(us < 170.0);
  // Without `every`, two writes into a buffer already pinned take a few us.
  const auto& back_to_back = r.program["steps"][8];
  REQUIRE(back_to_back["call"] == "dma");
  CHECK(back_to_back["end_ns"].get<double>() - back_to_back["start_ns"].get<double>() < 20'000);
}
