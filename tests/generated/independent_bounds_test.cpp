// The independent bounds checked against what docs/design.md states ("PCIe timing") and
// against a shipped topology's own numbers, so that the oracle itself is right.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

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
  // A single TLP is not slowed by the DLLPs that acknowledge it, which follow it (a 4 KiB write
  // on Gen1 x1 with an ACK due every 119 bytes: seed 62 of the generator with the
  // sapphire_rapids, granite_rapids, epyc_milan and epyc_genoa presets).
  CHECK(link_limit_gbps(1, 1, 119, 2651, 4096, 4096, 24) ==
        Approx(0.25 * (1 - 4.0 / 1538) * 4096 / 4120).margin(0.00001));
  // Two: the first one's DLLPs come before the second.
  CHECK(link_limit_gbps(1, 1, 119, 0, 8192, 4096, 24) ==
        Approx(8192 /
               (4120 / (0.25 * (1 - 4.0 / 1538 - 8.0 / 119)) + 4120 / (0.25 * (1 - 4.0 / 1538))))
            .epsilon(1e-9));
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

TEST_CASE("oracle: a receiver's credits bound what a link carries per credit loop", "[oracle]") {
  // Gen5 x16 links 500 ns long: 64 KiB at MPS 256 is 256 TLPs, four at a time (ph 4) per
  // loop of 1000 ns there and back and a 20-byte TLP's 0.32 ns of symbols (gpu0 frees at
  // once): 63 loops after the first four, 63,020 ns.
  const auto dir = std::filesystem::temp_directory_path() / "p2psim_oracle_credits";
  std::filesystem::create_directories(dir);
  const auto file = (dir / "credits.yaml").string();
  std::ofstream(file) << R"(name: credits
pcie: {mps: 256B}
sockets:
  - {name: cpu0, platform: skylake_sp}
switches:
  - {name: sw0, latency: 100ns}
devices:
  - {name: gpu0, type: gpu}
  - {name: nic0, type: dma_engine}
links:
  - {up: cpu0, down: sw0, gen: 5, width: 16, latency: 500ns, credits: {cplh: 2}}
  - {up: sw0, down: gpu0, gen: 5, width: 16, latency: 500ns, credits: {ph: 4, cplh: 1}}
  - {up: sw0, down: nic0, gen: 5, width: 16, latency: 500ns}
)";
  machine_view m(file, P2PSIM_SOURCE_DIR "/topologies/platforms");
  const double loop_ns = 1000 + 20 / (32.0 * 128 / 130 / 8 * 16);
  auto w = m.bound("nic0", "gpu0", true, 64 << 10, 1);
  CHECK(w.bottleneck == "credits of link gpu0 (ph 4)");
  CHECK(w.max_gbps == Approx(65536 / (63 * loop_ns)));
  // Two streams of it: 512 TLPs, 127 loops.
  CHECK(m.bound("nic0", "gpu0", true, 64 << 10, 2).max_gbps == Approx(2 * 65536 / (127 * loop_ns)));
  // No more than four TLPs: nothing to wait for.
  CHECK(m.bound("nic0", "gpu0", true, 1024, 1).bottleneck.rfind("link ", 0) == 0);
  // A read of host memory: 64 B completions two at a time into sw0 (which holds each 100 ns
  // after its header: a 1,100 ns loop), and none into gpu0, which as an endpoint advertises
  // infinite completion credits (PCIe Base Spec 2.6.1) whatever the link says.
  auto r = m.bound("gpu0", "cpu0", false, 64 << 10, 1);
  CHECK(r.bottleneck == "credits of link sw0 (cplh 2)");
  CHECK(r.max_gbps == Approx(65536 / (511 * 1100.0)));
  std::filesystem::remove_all(dir);
}
