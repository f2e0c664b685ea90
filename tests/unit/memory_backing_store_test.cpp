// Sparse backing store (1 MiB chunks, zero until written) and fixed-rate throughput timing.
#include <catch2/catch.hpp>

#include <numeric>
#include <stdexcept>
#include <vector>

#include "models/memory/backing_store.h"
#include "models/memory/throughput.h"

using p2psim::memory::backing_store;
using p2psim::memory::throughput;

namespace {

constexpr uint64_t k_chunk = backing_store::chunk_bytes;

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(seed + i * 7 + (i >> 8));
  return v;
}

std::vector<uint8_t> read(const backing_store& s, uint64_t offset, size_t n) {
  std::vector<uint8_t> v(n, 0xEE);
  s.read(offset, v);
  return v;
}

}  // namespace

TEST_CASE("backing store: round trip across chunk boundaries", "[memory][backing_store]") {
  backing_store s(8 * k_chunk);
  CHECK(s.capacity() == 8 * k_chunk);
  CHECK(k_chunk == 16u << 10);
  // 3 MiB + 4 bytes starting 5 bytes before the end of chunk 0: touches chunks 0..3 only.
  const auto data = pattern(3 * k_chunk + 4, 3);
  const uint64_t at = k_chunk - 5;
  s.write(at, data);
  CHECK(read(s, at, data.size()) == data);
  CHECK(s.allocated_bytes() == 4 * k_chunk);
  // A read straddling a boundary, part of it in the written range and part not.
  const auto tail = read(s, at + data.size() - 4, 8);
  CHECK(std::vector<uint8_t>(tail.begin(), tail.begin() + 4) ==
        std::vector<uint8_t>(data.end() - 4, data.end()));
  CHECK(std::vector<uint8_t>(tail.begin() + 4, tail.end()) == std::vector<uint8_t>(4, 0));
  // Overwrite a few bytes across the boundary between chunks 1 and 2.
  const std::vector<uint8_t> patch = {1, 2, 3, 4};
  s.write(2 * k_chunk - 2, patch);
  CHECK(read(s, 2 * k_chunk - 2, 4) == patch);
  CHECK(read(s, 2 * k_chunk - 3, 1)[0] == data[2 * k_chunk - 3 - at]);
  CHECK(read(s, 2 * k_chunk + 2, 1)[0] == data[2 * k_chunk + 2 - at]);
}

TEST_CASE("backing store: unwritten bytes read as zero", "[memory][backing_store]") {
  backing_store s(64ull << 30);  // 64 GiB costs nothing until written
  CHECK(s.allocated_bytes() == 0);
  CHECK(read(s, 0, 16) == std::vector<uint8_t>(16, 0));
  CHECK(read(s, (64ull << 30) - 16, 16) == std::vector<uint8_t>(16, 0));
  CHECK(read(s, 5 * k_chunk - 8, 16) == std::vector<uint8_t>(16, 0));
  CHECK(s.allocated_bytes() == 0);  // reading does not allocate
  // Bytes next to a write in the same chunk are zero too.
  const std::vector<uint8_t> one = {0xAB};
  s.write(10 * k_chunk + 100, one);
  CHECK(read(s, 10 * k_chunk + 99, 3) == std::vector<uint8_t>{0, 0xAB, 0});
}

TEST_CASE("backing store: fill", "[memory][backing_store]") {
  backing_store s(4 * k_chunk);
  s.fill(k_chunk / 2, 2 * k_chunk, 0x5A);  // chunks 0, 1 and 2
  CHECK(s.allocated_bytes() == 3 * k_chunk);
  CHECK(read(s, k_chunk / 2 - 1, 1)[0] == 0);
  CHECK(read(s, k_chunk / 2, 1)[0] == 0x5A);
  CHECK(read(s, k_chunk - 4, 8) == std::vector<uint8_t>(8, 0x5A));
  CHECK(read(s, 2 * k_chunk + k_chunk / 2 - 1, 2) == std::vector<uint8_t>{0x5A, 0});
  s.fill(0, 0, 0xFF);  // empty fill: nothing happens
  CHECK(read(s, 0, 1)[0] == 0);
  CHECK(s.allocated_bytes() == 3 * k_chunk);
}

TEST_CASE("backing store: allocated bytes grow only on write", "[memory][backing_store]") {
  backing_store s(16 * k_chunk);
  const std::vector<uint8_t> b = {7};
  s.write(0, b);
  CHECK(s.allocated_bytes() == k_chunk);
  s.write(k_chunk - 1, b);  // same chunk
  CHECK(s.allocated_bytes() == k_chunk);
  s.write(15 * k_chunk, b);
  CHECK(s.allocated_bytes() == 2 * k_chunk);
  read(s, 4 * k_chunk, 3 * k_chunk);
  CHECK(s.allocated_bytes() == 2 * k_chunk);
  s.write(3 * k_chunk, std::vector<uint8_t>{});  // empty write allocates nothing
  CHECK(s.allocated_bytes() == 2 * k_chunk);
}

TEST_CASE("backing store: zeros written to untouched memory allocate nothing",
          "[memory][backing_store]") {
  backing_store s(4 * k_chunk);
  s.write(k_chunk - 8, std::vector<uint8_t>(k_chunk, 0));  // chunks 0 and 1, both untouched
  CHECK(s.allocated_bytes() == 0);
  s.fill(2 * k_chunk, 16, 0x77);
  s.write(2 * k_chunk + 4, std::vector<uint8_t>(4, 0));  // a written chunk takes its zeros
  CHECK(read(s, 2 * k_chunk + 2, 8) == std::vector<uint8_t>{0x77, 0x77, 0, 0, 0, 0, 0x77, 0x77});
  std::vector<uint8_t> mostly_zero(64, 0);
  mostly_zero[63] = 1;  // one byte that is not zero is a real write
  s.write(0, mostly_zero);
  CHECK(read(s, 62, 2) == std::vector<uint8_t>{0, 1});
  CHECK(s.allocated_bytes() == 2 * k_chunk);
}

TEST_CASE("backing store: out-of-range access throws", "[memory][backing_store]") {
  backing_store s(2 * k_chunk + 100);  // capacity need not be a chunk multiple
  std::vector<uint8_t> four(4, 1);
  s.write(2 * k_chunk + 96, four);  // the last four bytes
  CHECK(read(s, 2 * k_chunk + 96, 4) == four);
  CHECK_THROWS_AS(s.write(2 * k_chunk + 97, four), std::out_of_range);
  CHECK_THROWS_AS(s.read(2 * k_chunk + 97, four), std::out_of_range);
  CHECK_THROWS_AS(s.write(2 * k_chunk + 101, std::vector<uint8_t>{}), std::out_of_range);
  CHECK_THROWS_AS(s.fill(2 * k_chunk, 101, 0), std::out_of_range);
  CHECK_THROWS_AS(s.fill(~0ull, 2, 0), std::out_of_range);  // no wrap-around
  CHECK_THROWS_AS(s.fill(1, ~0ull, 0), std::out_of_range);
  CHECK(read(s, 2 * k_chunk + 96, 4) == four);  // a refused access changes nothing
}

TEST_CASE("throughput: serve time at a fixed rate", "[memory][throughput]") {
  throughput t(1.0);  // 1 GB/s = 1 byte per ns = 1000 ps per byte
  CHECK(t.limited());
  CHECK(t.serve(0, 1000) == 1'000'000);
  CHECK(t.free_at() == 1'000'000);
  throughput fast(25.0);  // 40 ps per byte: 256 B take 10.24 ns
  CHECK(fast.serve(5000, 256) == 5000 + 10'240);
  throughput odd(3.0);  // 333.33 ps per byte, rounded to the nearest ps per request
  CHECK(odd.serve(0, 1) == 333);
  CHECK(odd.serve(1000, 2) == 1667);
}

TEST_CASE("throughput: back-to-back requests queue", "[memory][throughput]") {
  throughput t(2.0);  // 500 ps per byte
  CHECK(t.serve(0, 100) == 50'000);
  // Arrives while the first is in service: starts when it is done.
  CHECK(t.serve(10'000, 100) == 100'000);
  CHECK(t.serve(100'000, 2) == 101'000);
  // Arrives after the resource went idle: starts at once.
  CHECK(t.serve(200'000, 4) == 202'000);
  CHECK(t.free_at() == 202'000);
}

TEST_CASE("throughput: 0 GB/s is unlimited", "[memory][throughput]") {
  throughput t(0.0);
  CHECK_FALSE(t.limited());
  CHECK(t.serve(1234, 1u << 30) == 1234);
  CHECK(t.serve(1000, 4096) == 1234);  // never earlier than an earlier request
  CHECK(t.serve(5000, 4096) == 5000);
  throughput d;
  CHECK_FALSE(d.limited());
  CHECK(d.free_at() == 0);
  CHECK(d.serve(42, 100) == 42);
}
