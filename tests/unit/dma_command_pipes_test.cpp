// A DMA engine's move of read data into its local memory (models/dma/command_pipes.h;
// docs/architecture.md, "Device-side data rate").
#include <algorithm>
#include <catch2/catch.hpp>

#include "models/dma/command_pipes.h"

using p2psim::dma::command_pipes;

TEST_CASE("command pipes: without a rate data lands as it arrives", "[dma]") {
  command_pipes p(4096, 0);
  CHECK_FALSE(p.enabled());
  CHECK(p.land(1, 0, 64, 1, 1000, 1000, 1000) == 1000);
  CHECK(p.land(1, 64, 4096, 16, 1000, 5000, 1000) == 5000);
}

// Times in picoseconds; 2 bytes per ns moves 64 B in 32 ns.
TEST_CASE("command pipes: one command's completions move one after another", "[dma]") {
  command_pipes p(4096, 2.0);
  // Four 64 B completions arrive 10 ns apart, faster than the pipe moves them.
  CHECK(p.land(1, 0, 64, 1, 1'000'000, 1'000'000, 0) == 1'032'000);
  CHECK(p.land(1, 64, 64, 1, 1'010'000, 1'010'000, 0) == 1'064'000);
  CHECK(p.land(1, 128, 64, 1, 1'020'000, 1'020'000, 0) == 1'096'000);
  CHECK(p.land(1, 192, 64, 1, 1'030'000, 1'030'000, 0) == 1'128'000);
  // One that comes after the pipe ran dry starts at its arrival.
  CHECK(p.land(1, 256, 64, 1, 2'000'000, 2'000'000, 0) == 2'032'000);
}

TEST_CASE("command pipes: commands and streams move side by side", "[dma]") {
  command_pipes p(4096, 2.0);
  CHECK(p.land(1, 0, 256, 1, 1'000'000, 1'000'000, 0) == 1'128'000);
  CHECK(p.land(1, 4096, 256, 1, 1'000'000, 1'000'000, 0) == 1'128'000);  // the next command
  CHECK(p.land(2, 0, 256, 1, 1'000'000, 1'000'000, 0) == 1'128'000);     // another stream
  // A completion across a command boundary: each part in its own command's pipe.
  CHECK(p.land(3, 4096 - 64, 128, 1, 1'000'000, 1'000'000, 0) == 1'032'000);
}

TEST_CASE("command pipes: a pipe faster than the link adds one TLP's move", "[dma]") {
  command_pipes p(0, 10.0);  // 64 B in 6.4 ns; TLPs 20 ns apart
  uint64_t done = 0;
  for (uint64_t k = 0; k < 8; ++k) {
    const uint64_t at = 1'000'000 + 20'000 * k;
    done = p.land(1, k * 64, 64, 1, at, at, 0);
  }
  CHECK(done == 1'140'000 + 6'400);
}

// Burst fidelity hands the pipe a whole burst of TLPs that come evenly; TLP fidelity hands
// them one by one. Both must give the same end, whatever the rates, sizes and spacing.
TEST_CASE("command pipes: a burst ends where its TLPs one by one do", "[dma]") {
  for (uint32_t tlps : {1u, 2u, 3u, 16u, 63u})
    for (uint64_t tlp_bytes : {64u, 128u, 256u})
      for (uint64_t gap : {0u, 7u, 19u, 40u, 150u})  // ns between TLPs
        for (double rate : {0.5, 3.38, 8.0, 64.0})
          for (uint64_t command : {0u, 4096u})
            for (uint64_t offset : {0u, 256u, 3840u}) {
              const uint64_t spacing = gap * 1000, first = 1'000'000'000;
              const uint64_t last = first + spacing * (tlps - 1);
              command_pipes burst(command, rate), one_by_one(command, rate);
              const uint64_t end = burst.land(1, offset, tlps * tlp_bytes, tlps, first, last, 0);
              uint64_t end_tlps = 0;
              for (uint32_t k = 0; k < tlps; ++k) {
                const uint64_t at = first + spacing * k;
                end_tlps = std::max(
                    end_tlps, one_by_one.land(1, offset + k * tlp_bytes, tlp_bytes, 1, at, at, 0));
              }
              INFO(tlps << " TLPs of " << tlp_bytes << " B, " << spacing << " ps apart, " << rate
                        << " GB/s, command " << command << " B, offset " << offset);
              // Each TLP's move is rounded to a whole picosecond: at most one per TLP apart.
              CHECK(end <= end_tlps + tlps);
              CHECK(end_tlps <= end + tlps);
            }
}

TEST_CASE("command pipes: dropping idle pipes changes no result", "[dma]") {
  command_pipes p(4096, 1.0), keep(4096, 1.0);
  uint64_t t = 0;
  for (uint32_t s = 1; s <= 600; ++s) {
    t += 100'000;  // 100 ns: each pipe (64 ns of work) is idle again by its stream's next turn
    // `p` may drop pipes idle at `t`; `keep` is told it is time 0 and drops none.
    CHECK(p.land(s % 300, 0, 64, 1, t, t, t) == keep.land(s % 300, 0, 64, 1, t, t, 0));
  }
  CHECK(p.pipes_held() < keep.pipes_held());
}
