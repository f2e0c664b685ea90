// The independent bounds checked against what docs/design.md states ("PCIe timing") and
// against a shipped topology's own numbers, so that the oracle itself is right.
#include <catch2/catch.hpp>

#include "tests/generated/independent_bounds.h"

using p2psim::oracle::link_limit_gbps;
using p2psim::oracle::machine_view;

TEST_CASE("oracle: link limits equal docs/design.md's analytic table", "[oracle]") {
  // Gen3 x16, MPS 256, MWr64 (24 bytes a TLP), an ACK and an UpdateFC every 168 bytes (the
  // spec's table for that link, as p2psim's JSON reports it): 12.99 GB/s for large writes.
  CHECK(link_limit_gbps(3, 16, 168, 168, 1ull << 30, 256, 24) == Approx(12.99).margin(0.005));
  // Raw rates with no DLLPs and no overhead, less SKIPs: 15.75 / 31.51 / 63.02 GB/s at x16.
  CHECK(link_limit_gbps(3, 16, 0, 0, 1ull << 30, 1ull << 30, 0) ==
        Approx(15.75 * (1 - 4.0 / 1538)).margin(0.005));
  CHECK(link_limit_gbps(5, 16, 0, 0, 1ull << 30, 1ull << 30, 0) ==
        Approx(63.02 * (1 - 4.0 / 1538)).margin(0.005));
  CHECK(link_limit_gbps(1, 1, 0, 0, 1ull << 30, 1ull << 30, 0) ==
        Approx(0.25 * (1 - 4.0 / 1538)).margin(0.0005));
  // One byte still pays a whole TLP's overhead.
  CHECK(link_limit_gbps(3, 16, 0, 0, 1, 256, 20) ==
        Approx(15.75 * (1 - 4.0 / 1538) / 21).margin(0.005));
}

TEST_CASE("oracle: switch_only's paths from the topology file alone", "[oracle]") {
  machine_view m(P2PSIM_SOURCE_DIR "/topologies/switch_only.yaml",
                 P2PSIM_SOURCE_DIR "/topologies/platforms");
  // nic0 -> gpu0 under one switch: two links (5 ns each by default) and the switch (110 ns).
  auto w = m.bound("nic0", "gpu0", true, 8 << 20, 1);
  CHECK(w.links == std::vector<std::string>{"nic0", "gpu0"});
  CHECK(w.min_latency_ns == Approx(120));
  CHECK(w.max_gbps < 15.75);
  // A read goes both ways and waits for VRAM (300 ns by default).
  auto r = m.bound("nic0", "gpu0", false, 4, 1);
  CHECK(r.min_latency_ns == Approx(540));
  // Host memory: up to the root complex (its latency counts once).
  auto h = m.bound("nic0", "cpu0", true, 4, 1);
  CHECK(h.links == std::vector<std::string>{"nic0", "sw0"});
}

TEST_CASE("oracle: a path to another socket names the interconnect", "[oracle]") {
  machine_view m(P2PSIM_SOURCE_DIR "/topologies/cross_qpi.yaml",
                 P2PSIM_SOURCE_DIR "/topologies/platforms");
  auto p = m.bound("nic0", "gpu0", true, 1 << 20, 1);
  CHECK(p.links == std::vector<std::string>{"nic0", "gpu0"});
  CHECK(p.interconnects == std::vector<std::string>{"upi0"});
  auto h = m.bound("nic0", "cpu0", true, 4, 1);  // the other socket's memory
  CHECK(h.interconnects == std::vector<std::string>{"upi0"});
  CHECK(m.bound("nic0", "cpu1", true, 4, 1).interconnects.empty());  // its own socket's
}
