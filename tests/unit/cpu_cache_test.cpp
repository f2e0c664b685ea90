// What CPUs hold cached of host memory (models/root_complex/cpu_cache.h; PCIe Base 2.2.6.5):
// snooped writes drop lines, No Snoop writes leave them stale until a flush or an eviction,
// which a choice source decides at the next load.
#include <catch2/catch.hpp>

#include <vector>

#include "models/memory/backing_store.h"
#include "models/pcie/choices.h"
#include "models/pcie/order_policy.h"
#include "models/root_complex/cpu_cache.h"

using namespace p2psim;

namespace {

uint8_t load_byte(root_complex::cpu_cache& c, const memory::backing_store& m, uint64_t at) {
  std::vector<uint8_t> b(1);
  c.load(m, at, b);
  return b[0];
}

void dma_write(memory::backing_store& m, root_complex::cpu_cache& c, uint64_t at, uint8_t v,
               bool no_snoop) {
  const std::vector<uint8_t> b(64, v);
  m.write(at, b);
  c.written(at, b.size(), no_snoop);
}

}  // namespace

TEST_CASE("cpu cache: a snooped write drops the line, a No Snoop one leaves it stale",
          "[unit][cpu_cache]") {
  memory::backing_store m(1 << 20);
  pcie::order_policy order;
  root_complex::cpu_cache c(order);
  CHECK(load_byte(c, m, 128) == 0);  // the line is held from now on
  CHECK(c.lines() == 1);
  dma_write(m, c, 128, 1, false);
  CHECK(c.lines() == 0);
  CHECK(load_byte(c, m, 130) == 1);
  dma_write(m, c, 128, 2, true);
  CHECK(load_byte(c, m, 128) == 1);  // stale: no choice source keeps it
  CHECK(load_byte(c, m, 192) == 0);  // another line: read from memory
  c.flush(128, 1);
  CHECK(load_byte(c, m, 128) == 2);
}

TEST_CASE("cpu cache: a CPU store writes through and updates the held line", "[unit][cpu_cache]") {
  memory::backing_store m(1 << 20);
  pcie::order_policy order;
  root_complex::cpu_cache c(order);
  load_byte(c, m, 0);
  const std::vector<uint8_t> seven{7};
  c.store(m, 3, seven);
  CHECK(load_byte(c, m, 3) == 7);
  std::vector<uint8_t> in_memory(1);
  m.read(3, in_memory);
  CHECK(in_memory[0] == 7);
}

TEST_CASE("cpu cache: whether a stale line was evicted is decided once, at the next load",
          "[unit][cpu_cache]") {
  memory::backing_store m(1 << 20);
  pcie::replay_choices evicted({1});
  pcie::order_policy order{pcie::ordering_rules{}, &evicted};
  root_complex::cpu_cache c(order);
  load_byte(c, m, 0);
  load_byte(c, m, 0);  // nothing stale: nothing to decide
  CHECK(evicted.taken().empty());
  dma_write(m, c, 0, 5, true);
  CHECK(load_byte(c, m, 0) == 5);  // evicted: read again
  CHECK(load_byte(c, m, 0) == 5);
  CHECK(evicted.taken().size() == 1);
}

TEST_CASE("cpu cache: with Host:snoop or Host:no-snoop turned off", "[unit][cpu_cache]") {
  memory::backing_store m(1 << 20);
  pcie::order_policy no_snoop_off;
  no_snoop_off.rules.disable(pcie::order_rule::host_no_snoop);
  root_complex::cpu_cache c(no_snoop_off);  // No Snoop writes are snooped
  load_byte(c, m, 0);
  dma_write(m, c, 0, 1, true);
  CHECK(load_byte(c, m, 0) == 1);
  pcie::order_policy snoop_off;
  snoop_off.rules.disable(pcie::order_rule::host_snoop);
  root_complex::cpu_cache d(snoop_off);  // nothing drops a line but a flush
  load_byte(d, m, 0);
  dma_write(m, d, 0, 2, false);
  CHECK(load_byte(d, m, 0) == 1);
}
