// Platform presets reproduce the public figures they cite (docs/design.md, "Calibration
// figures").
#include <catch2/catch.hpp>

#include "tests/models/harness.h"

// pcie-bench measured with a Netronome NFP-6000, whose latency includes moving the data into
// the card's memory (topologies/devices/nfp6000.yaml): 560 ns at 64 B, 1133 ns at 2 KB.
TEST_CASE("Sandy Bridge-EP host DMA read latency matches pcie-bench", "[calibration]") {
  auto r = p2psim::test::run_scenario(
      "tests/data/scenarios/host_read_latency.yaml",
      {"link.nic0.width=8", "socket.cpu0.platform=sandy_bridge_ep",
       "socket.cpu1.platform=sandy_bridge_ep", "device.nic0.model=nfp6000"});
  double local_ns = p2psim::test::transfer(r, "local").seconds * 1e9;
  double remote_ns = p2psim::test::transfer(r, "remote").seconds * 1e9;
  double local_2kb_ns = p2psim::test::transfer(r, "local_2kb").seconds * 1e9;
  INFO("local " << local_ns << " ns, remote " << remote_ns << " ns, 2 KB " << local_2kb_ns);
  CHECK(local_ns == Approx(560).epsilon(0.02));  // median 560 ns (Sandy/Ivy Bridge, Gen3 x8)
  CHECK(remote_ns >= 653 * 0.98);                // remote socket 653-666 ns
  CHECK(remote_ns <= 666 * 1.02);
  CHECK(local_2kb_ns == Approx(1133).epsilon(0.05));  // median 1133 ns
}

// Two H200 VMs on Emerald Rapids hosts (tests/data/hw_probe/README.md): 55.3 GB/s host to device
// and 55.2 device to host with 256 MiB copies at MPS 256 B (the median of five leases). Reads
// of host memory run as fast as writes, so the root complex completes in pieces of the MPS (the
// preset's completion_size: 64 B completions allow 43.31 GB/s, pcie-bench), and the GPU and the
// root port send their ACK and UpdateFC DLLPs less often than the spec's tables say (h200.yaml
// and emerald_rapids.yaml, calibrated on those copies; docs/architecture.md, "Timing model and
// why"). These DMA transfers write host memory below 4 GiB, with 3DW headers (276 B on the wire
// per 256 B), where the copies wrote above it with 4DW headers (280 B): the same link time
// carries 280/276 as many bytes.
TEST_CASE("Emerald Rapids: an H200's host copies run at the measured rate both ways",
          "[calibration]") {
  auto r = p2psim::test::run_scenario("tests/data/scenarios/gen5_host_copies.yaml");
  const double h2d = p2psim::test::transfer(r, "h2d").gbps;
  const double d2h = p2psim::test::transfer(r, "d2h").gbps;
  INFO("host to device " << h2d << " GB/s, device to host " << d2h << " GB/s");
  CHECK(h2d > 43.31);  // more than 64 B completions allow
  // Within the calibration's precision (0.05%) and the first TLP's way there and back, under
  // a microsecond of the 4.9 ms.
  CHECK(h2d == Approx(55.3).epsilon(0.002));
  CHECK(d2h == Approx(55.2 * 280 / 276).epsilon(0.002));
}
