// Cutting requests and completions into TLPs (PCIe Base Spec 2.2.7, 2.3.1.1; models/pcie/split.h).
#include <catch2/catch.hpp>

#include <stdexcept>
#include <vector>

#include "models/pcie/split.h"

using namespace p2psim::pcie;

namespace {

constexpr uint64_t k_4k = 4096;

// Checks the invariants of split_request's output and returns the number of chunks.
size_t check_request_split(uint64_t address, uint64_t length, uint32_t max_bytes) {
  INFO("address " << address << " length " << length << " max " << max_bytes);
  const std::vector<chunk> cs = split_request(address, length, max_bytes);
  uint64_t next = address, total = 0;
  for (size_t i = 0; i < cs.size(); ++i) {
    const chunk& c = cs[i];
    REQUIRE(c.length > 0);
    REQUIRE(c.address == next);  // contiguous, in order, no gaps or overlaps
    REQUIRE(c.length <= max_bytes);
    // PCIe Base Spec 2.2.7: a request must not cross a 4 KiB boundary.
    REQUIRE(c.address / k_4k == (c.address + c.length - 1) / k_4k);
    // After the first chunk, every chunk starts on a max_bytes boundary (split.h).
    if (i > 0) REQUIRE(c.address % max_bytes == 0);
    next += c.length;
    total += c.length;
  }
  REQUIRE(total == length);
  return cs.size();
}

// Checks the invariants of split_completion's output.
void check_completion_split(uint64_t address, uint32_t length, uint32_t max_bytes, uint32_t rcb) {
  INFO("address " << address << " length " << length << " max " << max_bytes << " rcb " << rcb);
  const std::vector<chunk> cs = split_completion(address, length, max_bytes, rcb);
  uint64_t next = address, total = 0;
  for (size_t i = 0; i < cs.size(); ++i) {
    const chunk& c = cs[i];
    REQUIRE(c.length > 0);
    REQUIRE(c.address == next);
    REQUIRE(c.length <= max_bytes);  // PCIe Base Spec 2.2.2: payload at most MPS
    // PCIe Base Spec 2.3.1.1: every completion but the last ends on an RCB boundary.
    if (i + 1 < cs.size()) REQUIRE((c.address + c.length) % rcb == 0);
    next += c.length;
    total += c.length;
  }
  REQUIRE(total == length);
}

}  // namespace

TEST_CASE("split: aligned request at MPS", "[pcie][split]") {
  const auto cs = split_request(0x10000, 1024, 256);
  REQUIRE(cs.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(cs[i].address == 0x10000 + 256 * i);
    CHECK(cs[i].length == 256);
  }
  CHECK(split_request(0, 4096, 4096).size() == 1);
  CHECK(split_request(0x1000, 0, 256).empty());
}

TEST_CASE("split: unaligned start ends the first chunk at the next boundary", "[pcie][split]") {
  const auto cs = split_request(0x1010, 600, 256);
  REQUIRE(cs.size() == 3);
  CHECK(cs[0].address == 0x1010);
  CHECK(cs[0].length == 0xF0);  // up to 0x1100
  CHECK(cs[1].address == 0x1100);
  CHECK(cs[1].length == 256);
  CHECK(cs[2].address == 0x1200);
  CHECK(cs[2].length == 600 - 0xF0 - 256);
}

TEST_CASE("split: a request never crosses 4 KiB even at MRRS 4096", "[pcie][split]") {
  // PCIe Base Spec 2.2.7: requests must not cross a 4 KiB boundary.
  const auto cs = split_request(0x2F00, 4096, 4096);
  REQUIRE(cs.size() == 2);
  CHECK(cs[0].address == 0x2F00);
  CHECK(cs[0].length == 0x100);
  CHECK(cs[1].address == 0x3000);
  CHECK(cs[1].length == 4096 - 0x100);
  // A small read that straddles a page boundary is cut in two.
  const auto small = split_request(0xFFC, 8, 512);
  REQUIRE(small.size() == 2);
  CHECK(small[0].length == 4);
  CHECK(small[1].address == 0x1000);
  CHECK(small[1].length == 4);
}

TEST_CASE("split: request invariants over many shapes", "[pcie][split]") {
  for (uint32_t max : {128u, 256u, 512u, 1024u, 2048u, 4096u})
    for (uint64_t addr :
         {0ull, 1ull, 4ull, 60ull, 127ull, 0xFFCull, 0x1234ull, 0x7FFFF80ull, 0x1'0000'0ABCull})
      for (uint64_t len : {1ull, 3ull, 64ull, 128ull, 255ull, 4096ull, 5000ull, 65536ull + 17})
        check_request_split(addr, len, max);
  // 1 MiB aligned at MPS 256: exactly 4096 TLPs.
  CHECK(check_request_split(0x4000'0000, 1 << 20, 256) == 4096);
}

TEST_CASE("split: request_splitter yields the same chunks lazily", "[pcie][split]") {
  for (uint32_t max : {128u, 512u, 4096u})
    for (uint64_t addr : {0ull, 0x10ull, 0xFF0ull, 0x12345ull}) {
      const uint64_t len = 3 * 4096 + 77;
      const auto expect = split_request(addr, len, max);
      request_splitter s(addr, len, max);
      CHECK(s.remaining() == len);
      uint64_t left = len;
      for (const chunk& e : expect) {
        REQUIRE_FALSE(s.done());
        const chunk c = s.next();
        CHECK(c.address == e.address);
        CHECK(c.length == e.length);
        left -= c.length;
        CHECK(s.remaining() == left);
      }
      CHECK(s.done());
      CHECK_THROWS_AS(s.next(), std::logic_error);
    }
  CHECK(request_splitter().done());
  CHECK(request_splitter(0x1000, 0, 256).done());
}

TEST_CASE("split: invalid request split sizes throw", "[pcie][split]") {
  CHECK_THROWS_AS(split_request(0, 4096, 0), std::invalid_argument);
  CHECK_THROWS_AS(split_request(0, 4096, 100), std::invalid_argument);
  CHECK_THROWS_AS(split_request(0, 4096, 384), std::invalid_argument);
  CHECK_THROWS_AS(split_request(0, 4096, 8192), std::invalid_argument);
}

TEST_CASE("split: aligned completions at MPS", "[pcie][split]") {
  const auto cs = split_completion(0x1000, 1024, 256, 64);
  REQUIRE(cs.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(cs[i].address == 0x1000 + 256 * i);
    CHECK(cs[i].length == 256);
  }
  CHECK(split_completion(0x1000, 0, 256, 64).empty());
}

TEST_CASE("split: unaligned read's first completion is short, to an RCB", "[pcie][split]") {
  // PCIe Base Spec 2.3.1.1: completions end on RCB boundaries except the last.
  const auto cs = split_completion(0x1010, 300, 256, 64);
  REQUIRE(cs.size() == 2);
  CHECK(cs[0].address == 0x1010);
  CHECK(cs[0].length == 0xF0);  // ends at 0x1100, the last 64 B boundary within 256 bytes
  CHECK(cs[1].address == 0x1100);
  CHECK(cs[1].length == 300 - 0xF0);

  const auto rcb128 = split_completion(0x1050, 512, 256, 128);
  REQUIRE(rcb128.size() == 3);
  CHECK(rcb128[0].length == 0x1100 - 0x1050);
  CHECK(rcb128[1].address == 0x1100);
  CHECK(rcb128[1].length == 256);
  CHECK(rcb128[2].address == 0x1200);
  CHECK(rcb128[2].length == 512 - 0xB0 - 256);
}

TEST_CASE("split: completions split at every RCB", "[pcie][split]") {
  // A completer that splits at each 64 B RCB (docs/design.md, "Calibration figures": the "MRd
  // CplD=64 B" column).
  const auto cs = split_completion(0x2000, 256, 64, 64);
  REQUIRE(cs.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    CHECK(cs[i].address == 0x2000 + 64 * i);
    CHECK(cs[i].length == 64);
  }
  // A small read inside one RCB is one completion, even if it does not end on the RCB.
  const auto one = split_completion(0x2004, 8, 64, 64);
  REQUIRE(one.size() == 1);
  CHECK(one[0].length == 8);
}

TEST_CASE("split: completion invariants over many shapes", "[pcie][split]") {
  for (uint32_t rcb : {64u, 128u})
    for (uint32_t max : {128u, 256u, 512u, 4096u})
      for (uint64_t addr : {0ull, 4ull, 63ull, 64ull, 100ull, 0x1FFCull, 0x1'0000'0044ull})
        for (uint32_t len : {1u, 4u, 64u, 65u, 200u, 1000u, 4096u})
          check_completion_split(addr, len, max, rcb);
  check_completion_split(0x10, 4096, 192, 64);  // a multiple of the RCB, not a power of two
}

TEST_CASE("split: invalid completion parameters throw", "[pcie][split]") {
  CHECK_THROWS_AS(split_completion(0, 256, 256, 32), std::invalid_argument);
  CHECK_THROWS_AS(split_completion(0, 256, 256, 256), std::invalid_argument);
  CHECK_THROWS_AS(split_completion(0, 256, 256, 0), std::invalid_argument);
  CHECK_THROWS_AS(split_completion(0, 256, 32, 64), std::invalid_argument);    // below the RCB
  CHECK_THROWS_AS(split_completion(0, 256, 192, 128), std::invalid_argument);  // not a multiple
  CHECK_THROWS_AS(split_completion(0, 256, 0, 64), std::invalid_argument);
}
