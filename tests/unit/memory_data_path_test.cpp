// The memory data path booked ahead (models/memory/data_path.h): against a slot-by-slot
// reference and against the in-order `throughput` where requests come in order.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "models/memory/data_path.h"
#include "models/memory/throughput.h"

using p2psim::memory::data_path;
using p2psim::memory::throughput;

TEST_CASE("data_path: a write goes in the gap before a read booked ahead", "[memory][data_path]") {
  data_path p(1.0);  // 1000 ps per byte
  // A read at 0 with 500 ns of access latency books its 4 bytes at 500 ns.
  CHECK(p.serve(500'000, 4, 0) == 504'000);
  // A write that comes in at 10 ns takes the path at once, not after the read.
  CHECK(p.serve(10'000, 256, 10'000) == 266'000);
  // One too long for the gap goes around the read: 200 ns before it, 106 after.
  CHECK(p.serve(300'000, 306, 300'000) == 610'000);
  // One that comes in during a booking starts after it.
  CHECK(p.serve(505'000, 1, 505'000) == 611'000);
  CHECK(p.bookings() == 1);  // 300-611 ns, all touching; the write's was over and forgotten
}

TEST_CASE("data_path: 0 GB/s is unlimited", "[memory][data_path]") {
  data_path p(0.0);
  CHECK(p.serve(5000, 1 << 20, 0) == 5000);
  CHECK(p.serve(10, 1 << 20, 0) == 10);
  CHECK(p.bookings() == 0);
}

TEST_CASE("data_path: requests in order are served as throughput serves them",
          "[memory][data_path]") {
  std::mt19937_64 rng(2452);
  for (double gbs : {0.7, 3.0, 25.0, 200.0}) {
    data_path p(gbs);
    throughput t(gbs);
    uint64_t now = 0;
    for (int i = 0; i < 2000; ++i) {
      now += rng() % 3000;
      const uint64_t bytes = rng() % 600;
      INFO("request " << i << " at " << now << " of " << bytes << " B, " << gbs << " GB/s");
      REQUIRE(p.serve(now, bytes, now) == t.serve(now, bytes));
    }
  }
}

TEST_CASE("data_path: random bookings against a slot-by-slot reference", "[memory][data_path]") {
  // 1000 GB/s: one byte a picosecond, so the reference is one slot per byte.
  std::mt19937_64 rng(1095);
  for (int run = 0; run < 50; ++run) {
    data_path p(1000.0);
    std::vector<bool> busy(200'000, false);
    uint64_t now = 0;
    for (int i = 0; i < 300; ++i) {
      now += rng() % 200;
      const uint64_t from = now + (rng() % 4 ? rng() % 400 : 0);  // reads book ahead
      const uint64_t bytes = rng() % 60;
      uint64_t t = from, left = bytes, end = from;
      while (t < busy.size() && busy[t]) end = ++t;  // in a booking: after it
      for (; left; ++t)
        if (!busy[t]) busy[t] = true, --left, end = t + 1;
      INFO("run " << run << " request " << i << ": from " << from << ", " << bytes << " B");
      REQUIRE(p.serve(from, bytes, now) == end);
    }
  }
}
