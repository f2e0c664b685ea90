// Requester tags (docs/design.md, "PCIe timing": 32 5-bit, 256 8-bit extended, 768/1024
// 10-bit tags).
#include <algorithm>
#include <catch2/catch.hpp>

#include <set>
#include <stdexcept>

#include "models/pcie/tag_pool.h"

using p2psim::pcie::tag_pool;

TEST_CASE("tag pool: every tag of 32, 256 and 768 handed out once", "[pcie][tag_pool]") {
  for (uint32_t size : {32u, 256u, 768u}) {
    INFO("size " << size);
    tag_pool p(size);
    CHECK(p.size() == size);
    CHECK(p.in_use() == 0);
    CHECK_FALSE(p.empty());
    std::set<uint16_t> seen;
    for (uint32_t i = 0; i < size; ++i) {
      const uint16_t t = p.acquire();
      CHECK(t == i);  // lowest tag first
      seen.insert(t);
    }
    CHECK(seen.size() == size);
    CHECK(*seen.rbegin() == size - 1);
    CHECK(p.in_use() == size);
    CHECK(p.empty());
    CHECK_THROWS_AS(p.acquire(), std::logic_error);
  }
}

TEST_CASE("tag pool: a released tag is reused", "[pcie][tag_pool]") {
  tag_pool p(32);
  for (int i = 0; i < 32; ++i) p.acquire();
  p.release(17);
  CHECK(p.in_use() == 31);
  CHECK_FALSE(p.empty());
  CHECK(p.acquire() == 17);
  CHECK(p.empty());
  p.release(3);
  p.release(9);
  CHECK(p.in_use() == 30);
  const uint16_t a = p.acquire(), b = p.acquire();
  CHECK(std::set<uint16_t>{a, b} == std::set<uint16_t>{3, 9});
}

TEST_CASE("tag pool: releasing a free or unknown tag throws", "[pcie][tag_pool]") {
  tag_pool p(256);
  CHECK_THROWS_AS(p.release(0), std::logic_error);  // never acquired
  const uint16_t t = p.acquire();
  p.release(t);
  CHECK_THROWS_AS(p.release(t), std::logic_error);  // double release
  CHECK(p.in_use() == 0);
  CHECK_THROWS_AS(p.release(256), std::logic_error);  // outside the pool
  CHECK_THROWS_AS(p.release(1023), std::logic_error);
}

TEST_CASE("tag pool: sizes outside 1..1024 throw", "[pcie][tag_pool]") {
  CHECK_THROWS_AS(tag_pool(0), std::invalid_argument);
  CHECK_THROWS_AS(tag_pool(1025), std::invalid_argument);
  CHECK(tag_pool(1).size() == 1);
  CHECK(tag_pool(1024).size() == 1024);
}

TEST_CASE("tag pool: a burst takes and returns many tags at once", "[pcie][tags][burst]") {
  p2psim::pcie::tag_pool p(8);
  const uint16_t first = p.acquire();
  std::vector<uint16_t> more;
  p.acquire(5, more);
  CHECK(more.size() == 5);
  CHECK(p.available() == 2);
  CHECK(p.in_use() == 6);
  CHECK(std::find(more.begin(), more.end(), first) == more.end());
  CHECK_THROWS_AS(p.acquire(3, more), std::logic_error);  // only two left
  p.release(more);
  p.release(first);
  CHECK(p.available() == 8);
  CHECK_THROWS_AS(p.release(more), std::logic_error);  // already free
}
