// The simulated kernel's user memory (models/driver/kernel/user_memory.h): blocks in frames of
// a physical memory, the CPU's reads and writes through them, and pinning, whose pages outlive
// the block they belonged to (GPUDirect RDMA 13.3, chapter 2: a driver pins user memory before
// its device's DMA, and the DMA must never land in memory that was reused meanwhile).
#include <catch2/catch.hpp>

#include <map>
#include <vector>

#include "models/driver/kernel/user_memory.h"

using namespace p2psim::kernel;

namespace {

// Two nodes of 1 MiB each, at bus addresses 1 GiB and 2 GiB, first fit; counts what is taken.
class two_nodes final : public physical_memory {
 public:
  static constexpr uint64_t node_bytes = 1 << 20;
  int nodes() const override { return 2; }
  std::optional<uint64_t> allocate(int node, uint64_t bytes) override {
    auto& taken = m_taken[node];
    uint64_t at = 0;
    for (const auto& [offset, length] : taken) {
      if (offset - at >= bytes) break;
      at = offset + length;
    }
    if (node_bytes - at < bytes) return std::nullopt;
    taken[at] = bytes;
    return base(node) + at;
  }
  void free(uint64_t bus, uint64_t bytes) override {
    const int node = bus >= base(1) ? 1 : 0;
    REQUIRE(m_taken[node].at(bus - base(node)) == bytes);
    m_taken[node].erase(bus - base(node));
  }
  void read(uint64_t bus, std::span<uint8_t> out) const override {
    for (size_t i = 0; i < out.size(); ++i) out[i] = byte(bus + i);
  }
  void write(uint64_t bus, std::span<const uint8_t> in) override {
    for (size_t i = 0; i < in.size(); ++i) m_bytes[bus + i] = in[i];
  }
  uint8_t byte(uint64_t bus) const {
    auto it = m_bytes.find(bus);
    return it == m_bytes.end() ? 0 : it->second;
  }
  uint64_t taken(int node) const {
    uint64_t n = 0;
    auto it = m_taken.find(node);
    if (it != m_taken.end())
      for (const auto& [offset, length] : it->second) n += length;
    return n;
  }
  static uint64_t base(int node) { return uint64_t(node + 1) << 30; }

 private:
  std::map<int, std::map<uint64_t, uint64_t>> m_taken;
  std::map<uint64_t, uint8_t> m_bytes;
};

std::vector<uint8_t> bytes_of(const user_memory& m, const void* p, size_t n) {
  std::vector<uint8_t> v(n);
  m.read(p, v);
  return v;
}

}  // namespace

TEST_CASE("user memory: a block's bytes are its frames' on its NUMA node", "[kernel]") {
  two_nodes frames;
  user_memory m;
  m.set_physical(&frames);
  auto* p = static_cast<uint8_t*>(m.allocate(7, 5000, 1));
  REQUIRE(p);
  CHECK(frames.taken(1) == 2 * page_bytes);  // rounded to pages
  CHECK(frames.taken(0) == 0);
  const std::vector<uint8_t> data{1, 2, 3, 4};
  m.write(p + 4096, data);
  std::vector<bus_run> runs;
  REQUIRE(m.pin(7, p + 4096, 4, runs) == 0);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].bus >= two_nodes::base(1));
  CHECK(runs[0].bytes == 4);
  for (size_t i = 0; i < data.size(); ++i) CHECK(frames.byte(runs[0].bus + i) == data[i]);
  frames.write(runs[0].bus, std::vector<uint8_t>{9});  // a device's DMA
  CHECK(bytes_of(m, p + 4096, 4) == std::vector<uint8_t>{9, 2, 3, 4});
  CHECK(m.unpin(p + 4096, 4) == 0);
  CHECK(m.unpin(p + 4096, 4) == -EINVAL);  // not pinned any more
}

TEST_CASE("user memory: pinned frames outlive a freed block and are never reused meanwhile",
          "[kernel]") {
  two_nodes frames;
  user_memory m;
  m.set_physical(&frames);
  void* a = m.allocate(1, page_bytes);
  std::vector<bus_run> runs;
  REQUIRE(m.pin(1, a, page_bytes, runs) == 0);
  const uint64_t held = runs[0].bus;
  CHECK(m.free(2, a) == false);  // another process's block
  CHECK(m.free(1, a));
  CHECK_FALSE(m.block_of(1, a));
  CHECK(m.free(1, a) == false);          // gone from the process
  CHECK(frames.taken(0) == page_bytes);  // but its frame stays pinned
  void* b = m.allocate(1, page_bytes);
  REQUIRE(m.pin(1, b, page_bytes, runs) == 0);
  CHECK(runs[0].bus != held);  // the new block never gets the pinned frame
  CHECK(m.unpin(a, page_bytes) == 0);
  CHECK(frames.taken(0) == page_bytes);  // now it is given back; b's remains
  CHECK(m.unpin(b, page_bytes) == 0);
  CHECK(m.pinned_pages() == 0);
}

TEST_CASE("user memory: pins nest, a new block reads zeros, and bad ranges are refused",
          "[kernel]") {
  two_nodes frames;
  user_memory m;
  m.set_physical(&frames);
  auto* p = static_cast<uint8_t*>(m.allocate(3, 2 * page_bytes));
  m.write(p, std::vector<uint8_t>(2 * page_bytes, 0xAB));
  std::vector<bus_run> runs;
  REQUIRE(m.pin(3, p + 100, page_bytes, runs) == 0);  // two pages
  REQUIRE(m.pin(3, p + page_bytes, 10, runs) == 0);   // the second again
  CHECK(m.pinned_pages() == 3);
  CHECK(m.pin(3, p, 0, runs) == -EINVAL);
  CHECK(m.pin(3, p, 2 * page_bytes + 1, runs) == -EFAULT);  // past the block
  CHECK(m.pin(4, p, 1, runs) == -EFAULT);                   // another process's
  int local = 0;
  CHECK(m.pin(3, &local, sizeof local, runs) == -EFAULT);  // memory the kernel never gave
  CHECK(m.unpin(p + 100, page_bytes) == 0);
  CHECK(m.unpin(p + page_bytes, 10) == 0);
  CHECK(m.free(3, p));
  auto* q = static_cast<uint8_t*>(m.allocate(3, 2 * page_bytes));
  CHECK(bytes_of(m, q, 2 * page_bytes) == std::vector<uint8_t>(2 * page_bytes, 0));
  CHECK(m.allocate(3, 1, 2) == nullptr);                      // no such node
  CHECK(m.allocate(3, two_nodes::node_bytes, 0) == nullptr);  // more than is free
  CHECK(m.allocate(3, 0, 0) == nullptr);
}

TEST_CASE("user memory: without a physical memory blocks are heap pages at their own address",
          "[kernel]") {
  user_memory m;
  auto* p = static_cast<uint8_t*>(m.allocate(1, 100));
  REQUIRE(p);
  p[99] = 7;  // the CPU's own pages
  CHECK(bytes_of(m, p + 99, 1) == std::vector<uint8_t>{7});
  std::vector<bus_run> runs;
  REQUIRE(m.pin(1, p + 10, 20, runs) == 0);
  CHECK(runs[0].bus == uint64_t(reinterpret_cast<uintptr_t>(p + 10)));
  int local = 5;
  REQUIRE(m.pin(1, &local, sizeof local, runs) == 0);  // any heap memory: itself
  CHECK(runs[0].bus == uint64_t(reinterpret_cast<uintptr_t>(&local)));
  CHECK(m.unpin(&local, sizeof local) == 0);
  CHECK(m.unpin(p + 10, 20) == 0);
  CHECK(m.free(1, p));
}

TEST_CASE("user memory: touching a block given back is an error, not a crash", "[kernel]") {
  for (bool physical : {true, false}) {
    INFO((physical ? "frames" : "heap pages"));
    two_nodes frames;
    user_memory m;
    if (physical) m.set_physical(&frames);
    auto* p = static_cast<uint8_t*>(m.allocate(1, page_bytes));
    REQUIRE(m.free(1, p));
    std::vector<uint8_t> out(16);
    CHECK_THROWS_AS(m.read(p + 8, out), std::runtime_error);  // a SIGSEGV on a real machine
    CHECK_THROWS_AS(m.write(p, out), std::runtime_error);
    CHECK(m.allocate(1, page_bytes) != p);  // its addresses are never handed out again
  }
}
