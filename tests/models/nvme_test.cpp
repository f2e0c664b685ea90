// The NVMe SSD kind (models/nvme) in a whole fabric: command timing against the sum of its
// phases, throughput against the lesser of the media rate and the analytic PCIe limit, queue
// depth, and data moved both ways between flash and GPU BAR1 verified byte for byte.
#include <catch2/catch.hpp>

#include "models/pcie/link_timing.h"
#include "tests/models/harness.h"

using namespace p2psim;
using Catch::Matchers::Contains;

namespace {

const nlohmann::json& drive(const core::run_result& r) {
  return r.stats.at("devices").at("nvme0");
}

// The drive's defaults (models/nvme/nvme_spec.h), in ns and GB/s.
constexpr double command_ns = 1000, read_ns = 80000, write_ns = 20000;
constexpr double read_gbs = 3.5, write_gbs = 3.3;

}  // namespace

TEST_CASE("nvme: one Read command takes command and flash latency and the media time") {
  auto r = test::run_scenario("tests/data/scenarios/nvme_read_to_host.yaml");
  const auto& b = test::transfer(r, "one");
  CHECK(b.bytes == 4096);
  CHECK(b.mismatched_bytes == 0);
  const auto& d = drive(r);
  CHECK(d["read_commands"] == 1);
  CHECK(d["completions"] == 1);
  CHECK(d["bytes_read"] == 4096);
  // Doorbell to completion: the phases before the data, then the data's 16 writes leaving on
  // the Gen3 x4 link, no slower than its analytic write rate (the completion entry starts
  // when the last one has).
  const double before_data_ns = command_ns + read_ns + 4096 / read_gbs;
  const double link_ns = 4096 / pcie::analytic_write_gbs(3, 4, 256, 4096, false);
  const double latency_ns = double(d["max_command_latency_ps"].get<uint64_t>()) / 1000;
  CHECK(latency_ns >= before_data_ns);
  CHECK(latency_ns <= before_data_ns + link_ns);
  // The transfer's time starts at the doorbell, so it holds the flash read too.
  CHECK(b.seconds * 1e9 >= before_data_ns);
}

TEST_CASE("nvme: Read throughput is the media rate when the link is faster") {
  // Gen3 x4 carries about 3.4 GB/s of 256 B writes; a 2 GB/s media is the limit.
  auto r = test::run_scenario("tests/data/scenarios/nvme_read_to_host.yaml",
                              {"transfers.one.size=16MiB", "device.nvme0.read_bandwidth=2GB/s"});
  const auto& b = test::transfer(r, "one");
  CHECK(b.mismatched_bytes == 0);
  CHECK(b.gbps <= 2.0);
  CHECK(b.gbps >= 0.97 * 2.0);
  CHECK(drive(r)["read_commands"] == 16 * 1024 / 128);
}

TEST_CASE("nvme: Read throughput is the link's when the media is faster") {
  auto r = test::run_scenario("tests/data/scenarios/nvme_read_to_host.yaml",
                              {"transfers.one.size=16MiB", "device.nvme0.read_bandwidth=10GB/s"});
  const auto& b = test::transfer(r, "one");
  // Host memory is low: 3DW headers (MWr32), the faster of the two limits.
  const double limit = pcie::analytic_write_gbs(3, 4, 256, 16 << 20, false);
  CHECK(b.gbps <= limit);
  CHECK(b.gbps >= 0.95 * limit);
}

TEST_CASE("nvme: one queue of depth 2 runs one command at a time") {
  // NVMe Base Spec: a submission queue is full when Tail + 1 == Head, so depth 2 holds one.
  auto r = test::run_scenario(
      "tests/data/scenarios/nvme_read_to_host.yaml",
      {"transfers.one.size=1MiB", "device.nvme0.queue_pairs=1", "device.nvme0.queue_depth=2"});
  const auto& d = drive(r);
  CHECK(d["max_outstanding"] == 1);
  CHECK(d["read_commands"] == 8);
  CHECK(d["queue_full_stalls"] == 7);
  // Eight commands back to back, each at least its command and flash latency and media time.
  const double per_command_ns = command_ns + read_ns + (128 << 10) / read_gbs;
  const auto& b = test::transfer(r, "one");
  CHECK(b.seconds * 1e9 >= 7 * per_command_ns);  // the first's latency precedes its first TLP
  CHECK(b.mismatched_bytes == 0);
}

TEST_CASE("nvme: deep queues overlap the flash latency") {
  auto r = test::run_scenario("tests/data/scenarios/nvme_read_to_host.yaml",
                              {"transfers.one.size=8MiB"});
  const auto& d = drive(r);
  CHECK(d["max_outstanding"] == 64);  // every command of the job at once
  CHECK(d["queue_full_stalls"] == 0);
  // One command's latency is paid once, not 64 times: close to the link's rate, far above
  // what one command at a time could reach.
  const double gbps = test::transfer(r, "one").gbps;
  CHECK(gbps >= 0.9 * pcie::analytic_write_gbs(3, 4, 256, 8 << 20));
  const double one_at_a_time_gbs = (128 << 10) / (command_ns + read_ns + (128 << 10) / read_gbs);
  CHECK(gbps > 2.5 * one_at_a_time_gbs);
}

TEST_CASE("nvme: GPU memory goes to flash and back byte for byte") {
  auto r = test::run_scenario("tests/data/scenarios/nvme_to_gpu.yaml");
  for (const char* name : {"ssd_to_gpu", "gpu_to_ssd"}) {
    const auto& b = test::transfer(r, name);
    CHECK(b.bytes == 16u << 20);
    CHECK(b.mismatched_bytes == 0);
    CHECK(b.failed_bytes == 0);
    CHECK(b.path == "PIX");
  }
  const auto& d = drive(r);
  CHECK(d["read_commands"] == 128);
  CHECK(d["write_commands"] == 128);
  CHECK(d["bytes_written"] == 16u << 20);
  CHECK(d["completions"] == 256);
  // A Write counts when it is programmed: never faster than the media writes.
  CHECK(test::transfer(r, "gpu_to_ssd").gbps <= write_gbs);
  CHECK(test::transfer(r, "gpu_to_ssd").gbps >= 0.9 * write_gbs);
  CHECK(test::transfer(r, "ssd_to_gpu").gbps <= read_gbs);
}

TEST_CASE("nvme: a Write command is acknowledged after its flash program") {
  auto r = test::run_scenario("tests/data/scenarios/nvme_to_gpu.yaml",
                              {"transfers.ssd_to_gpu.size=4KiB", "transfers.gpu_to_ssd.size=4KiB"});
  const auto& d = drive(r);
  // The longest command is the Write: data in, media write, then the program latency.
  const double latency_ns = double(d["max_command_latency_ps"].get<uint64_t>()) / 1000;
  CHECK(latency_ns >= command_ns + write_ns + 4096 / write_gbs);
  CHECK(test::transfer(r, "gpu_to_ssd").seconds * 1e9 >= write_ns);
}
