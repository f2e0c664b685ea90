// Bursts carry whole 64 KiB chunks between stores by reference: the receiver must end up with
// exactly the bytes the source held when the burst read them, whatever either side writes
// afterwards (copy on write).
#include <catch2/catch.hpp>
#include <vector>

#include "models/memory/backing_store.h"

using namespace p2psim::memory;

namespace {
std::vector<uint8_t> read(const backing_store& s, uint64_t at, size_t n) {
  std::vector<uint8_t> v(n);
  s.read(at, v);
  return v;
}
}  // namespace

TEST_CASE("shared chunk: only whole chunks are shared", "[memory][burst]") {
  backing_store s(8 * chunk_bytes);
  s.fill(0, chunk_bytes, 7);
  CHECK(s.share(0, chunk_bytes).count == 1);
  CHECK(s.share(0, chunk_bytes).chunks[0].data()[5] == 7);
  CHECK_FALSE(s.share(0, chunk_bytes - 1));
  CHECK_FALSE(s.share(64, chunk_bytes));
  s.fill(0, 6 * chunk_bytes, 7);
  CHECK(s.share(0, 4 * chunk_bytes).count == 4);
  CHECK_FALSE(s.share(0, 5 * chunk_bytes));  // more than one burst carries
}

TEST_CASE("shared chunk: unwritten chunks travel as zeros and allocate nothing",
          "[memory][burst]") {
  backing_store src(4 * chunk_bytes), dst(4 * chunk_bytes);
  src.fill(chunk_bytes, chunk_bytes, 0x33);  // the second chunk only
  chunk_run in_flight = src.share(0, 2 * chunk_bytes);
  REQUIRE(in_flight.count == 2);
  CHECK_FALSE(in_flight.chunks[0]);  // never written: an empty reference
  CHECK(in_flight.chunks[0].data()[chunk_bytes - 1] == 0);
  dst.fill(0, 4 * chunk_bytes, 0xEE);
  REQUIRE(dst.adopt(0, in_flight));
  in_flight.reset();
  CHECK(read(dst, 0, chunk_bytes) == std::vector<uint8_t>(chunk_bytes, 0));  // zeros landed
  CHECK(read(dst, chunk_bytes, 2) == std::vector<uint8_t>(2, 0x33));
  CHECK(read(dst, 2 * chunk_bytes, 2) == std::vector<uint8_t>(2, 0xEE));
  CHECK(dst.allocated_bytes() == 3 * chunk_bytes);  // the zeroed chunk was given back
  CHECK(src.allocated_bytes() == chunk_bytes);
}

TEST_CASE("shared chunk: a carried chunk keeps the bytes it was read with", "[memory][burst]") {
  backing_store src(2 * chunk_bytes), dst(2 * chunk_bytes);
  src.fill(chunk_bytes, chunk_bytes, 0x11);
  dst.fill(0, 2 * chunk_bytes, 0xEE);
  chunk_run in_flight = src.share(chunk_bytes, chunk_bytes);
  REQUIRE(in_flight);
  src.fill(chunk_bytes, 16, 0x22);  // the source changes after the burst read it
  CHECK(in_flight.chunks[0].data()[0] == 0x11);
  REQUIRE(dst.adopt(0, in_flight));
  in_flight.reset();
  CHECK(read(dst, 0, chunk_bytes) == std::vector<uint8_t>(chunk_bytes, 0x11));
  CHECK(read(dst, chunk_bytes, 4) == std::vector<uint8_t>(4, 0xEE));  // the next chunk as it was
  CHECK(read(src, chunk_bytes, 16) == std::vector<uint8_t>(16, 0x22));
  CHECK_FALSE(dst.adopt(8, src.share(chunk_bytes, chunk_bytes)));  // not chunk-aligned
}

TEST_CASE("shared chunk: a run of chunks lands whole", "[memory][burst]") {
  backing_store src(4 * chunk_bytes), dst(8 * chunk_bytes);
  for (uint64_t i = 0; i < 4; ++i) src.fill(i * chunk_bytes, chunk_bytes, uint8_t(i + 1));
  REQUIRE(dst.adopt(2 * chunk_bytes, src.share(0, 4 * chunk_bytes)));
  for (uint64_t i = 0; i < 4; ++i) CHECK(read(dst, (2 + i) * chunk_bytes + 5, 1)[0] == i + 1);
  CHECK(read(dst, chunk_bytes, 1)[0] == 0);
  CHECK(dst.allocated_bytes() == 4 * chunk_bytes);
}

TEST_CASE("shared chunk: writing to a shared chunk copies it first", "[memory][burst]") {
  backing_store a(chunk_bytes), b(chunk_bytes);
  a.fill(0, chunk_bytes, 1);
  REQUIRE(b.adopt(0, a.share(0, chunk_bytes)));
  b.fill(100, 1, 9);  // b's copy only
  CHECK(read(a, 100, 1)[0] == 1);
  CHECK(read(b, 100, 1)[0] == 9);
  a.fill(0, 1, 5);  // a's only
  CHECK(read(b, 0, 1)[0] == 1);
  CHECK(a.allocated_bytes() == chunk_bytes);
  CHECK(b.allocated_bytes() == chunk_bytes);
}
