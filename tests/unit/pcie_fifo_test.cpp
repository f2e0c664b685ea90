// The ring buffer behind the per-TLP queues (models/pcie/fifo.h): it grows instead of
// overwriting, so no queued TLP or credit return is ever lost.
#include <catch2/catch.hpp>

#include <algorithm>
#include <iterator>
#include <vector>

#include "models/pcie/fifo.h"

using p2psim::pcie::fifo;

TEST_CASE("fifo: pushing past the capacity keeps every entry, in order", "[pcie][fifo]") {
  fifo<int> q;
  const size_t start = q.capacity();
  for (int i = 0; i < 1000; ++i) q.push_back(i);
  CHECK(q.capacity() > start);
  REQUIRE(q.size() == 1000);
  for (int i = 0; i < 1000; ++i) CHECK(q[size_t(i)] == i);
  for (int i = 0; i < 990; ++i) q.pop_front();  // wrap around the ring
  for (int i = 1000; i < 2000; ++i) q.push_back(i);
  REQUIRE(q.size() == 1010);
  CHECK(q.front() == 990);
  CHECK(q.back() == 1999);
}

TEST_CASE("fifo: a sorted insert into a full ring grows it and keeps every entry", "[pcie][fifo]") {
  fifo<int> q;
  for (int i = 0; i < int(q.capacity()); ++i) q.push_back(2 * i);  // full: 0, 2, 4, ...
  REQUIRE(q.full());
  const size_t n = q.size();
  auto pos = std::find_if(q.begin(), q.end(), [](int v) { return v > 5; });
  q.insert(pos, 5);
  REQUIRE(q.size() == n + 1);
  CHECK(std::is_sorted(q.begin(), q.end()));
  CHECK(q[3] == 5);
  CHECK(q.front() == 0);
  CHECK(q.back() == 2 * int(n - 1));
}
