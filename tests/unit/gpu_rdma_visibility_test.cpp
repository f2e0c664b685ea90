// What a GPU kernel sees of GPUDirect RDMA writes (GPUDirect RDMA 13.3, 5.7: stale data, data
// partially written or out of order until a CPU-initiated CUDA call), narrowed by
// CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING and cuFlushGPUDirectRDMAWrites. Each
// case scripts the choices: 0 = the kernel sees the sector, 1 = not yet.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "models/gpu/rdma_visibility.h"
#include "models/memory/backing_store.h"
#include "models/pcie/choices.h"

using namespace p2psim;
using gpu::consumer;
using gpu::rdma_visibility;
using gpu::writes_ordering;

namespace {

// Gives `v` a replay source for a scope: the scripted choices, then 0 (visible).
struct scripted {
  rdma_visibility& v;
  pcie::replay_choices choices;
  scripted(rdma_visibility& model, std::vector<size_t> script)
      : v(model), choices(std::move(script)) {
    v.set_choices(&choices);
  }
  ~scripted() { v.set_choices(nullptr); }
  size_t made() const { return choices.taken().size(); }
};

std::vector<uint8_t> bytes(size_t n, uint8_t v) {
  return std::vector<uint8_t>(n, v);
}

// A BAR1 write as the GPU model does it: tell the model, then store.
void land(rdma_visibility& v, memory::backing_store& vram, uint64_t at,
          const std::vector<uint8_t>& d) {
  v.landing(at, d);
  vram.write(at, d);
}

std::vector<uint8_t> kread(rdma_visibility& v, uint64_t at, size_t n, consumer c) {
  std::vector<uint8_t> out(n);
  v.kernel_read(at, out, c);
  return out;
}

}  // namespace

TEST_CASE("rdma visibility: without a choice source a kernel sees every landed write",
          "[gpu][visibility]") {
  memory::backing_store vram(1 << 20);
  rdma_visibility v(vram, writes_ordering::none);
  v.set_kernels_observe(true);
  CHECK(v.ordering() == writes_ordering::none);
  land(v, vram, 100, bytes(64, 7));
  CHECK(v.pending() == 3);  // bytes 100..163 touch sectors 3, 4 and 5
  CHECK(kread(v, 100, 64, consumer::owner) == bytes(64, 7));
  CHECK(kread(v, 100, 64, consumer::peer) == bytes(64, 7));
  CHECK(v.pending() == 0);  // seen by both: nothing left pending
  CHECK(v.stats().stale_reads == 0);
  CHECK(v.stats().landed_pending == 1);
}

TEST_CASE("rdma visibility: a kernel may read stale data while BAR1 sees the write",
          "[gpu][visibility]") {
  memory::backing_store vram(1 << 20);
  vram.write(0, bytes(8, 1));
  rdma_visibility v(vram, writes_ordering::none);
  v.set_kernels_observe(true);
  scripted s(v, {1});
  land(v, vram, 0, bytes(8, 2));
  CHECK(kread(v, 0, 8, consumer::owner) == bytes(8, 1));  // the before-image
  std::vector<uint8_t> bar1(8);
  vram.read(0, bar1);
  CHECK(bar1 == bytes(8, 2));  // a BAR1 read or a CUDA copy sees it at once
  CHECK(v.stats().stale_reads == 1);
  CHECK(v.pending() == 1);
}

TEST_CASE("rdma visibility: a kernel may see one sector of a 64 B write and not the other",
          "[gpu][visibility]") {
  memory::backing_store vram(1 << 20);
  rdma_visibility v(vram, writes_ordering::owner);
  v.set_kernels_observe(true);
  scripted s(v, {0, 1, 1});  // the first sector visible, the second not yet
  land(v, vram, 64, bytes(64, 9));
  std::vector<uint8_t> want = bytes(64, 0);
  std::fill_n(want.begin(), 32, 9);
  CHECK(kread(v, 64, 64, consumer::peer) == want);
  CHECK(s.made() == 2);
  CHECK(v.pending() == 1);  // the hidden sector

  SECTION("a write covering part of a sector is pending for just its bytes") {
    land(v, vram, 260, bytes(8, 5));  // bytes 4..11 of sector 8
    vram.write(256, bytes(4, 3));     // bytes next to it that no RDMA write touched
    std::vector<uint8_t> got = kread(v, 256, 16, consumer::peer);  // not yet visible
    CHECK(got == std::vector<uint8_t>{3, 3, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  }
}

TEST_CASE("rdma visibility: a later write may be visible while an earlier one is not",
          "[gpu][visibility]") {
  memory::backing_store vram(1 << 20);
  rdma_visibility v(vram, writes_ordering::none);
  v.set_kernels_observe(true);

  SECTION("in different sectors: data then flag") {
    land(v, vram, 0, bytes(32, 0xd));  // the payload
    land(v, vram, 64, bytes(4, 1));    // then the flag
    scripted s(v, {0, 1});             // the flag seen, the payload not
    CHECK(kread(v, 64, 4, consumer::owner) == bytes(4, 1));
    CHECK(kread(v, 0, 32, consumer::owner) == bytes(32, 0));
  }
  SECTION("in one sector") {
    scripted s(v, {1, 0});
    land(v, vram, 0, bytes(4, 0xa));
    CHECK(kread(v, 0, 8, consumer::owner) == bytes(8, 0));  // the earlier write: not yet
    land(v, vram, 4, bytes(4, 0xb));
    CHECK(kread(v, 0, 8, consumer::owner) ==  // the later one: seen
          std::vector<uint8_t>{0, 0, 0, 0, 0xb, 0xb, 0xb, 0xb});
    CHECK(s.made() == 2);
  }
}

TEST_CASE("rdma visibility: a kernel sees the newest visible write or the oldest before-image",
          "[gpu][visibility]") {
  memory::backing_store vram(1 << 20);
  rdma_visibility v(vram, writes_ordering::none);
  v.set_kernels_observe(true);
  scripted s(v, {1, 0, 1});
  land(v, vram, 0, {1});
  CHECK(kread(v, 0, 1, consumer::owner) == std::vector<uint8_t>{0});  // 1: hidden
  land(v, vram, 0, {2});
  CHECK(kread(v, 0, 1, consumer::owner) == std::vector<uint8_t>{2});  // 2: visible
  land(v, vram, 0, {3});
  CHECK(kread(v, 0, 1, consumer::owner) == std::vector<uint8_t>{2});  // 3: hidden
  // Writes no kernel has read yet are decided together, as one.
  land(v, vram, 8, {4});
  land(v, vram, 8, {5});
  land(v, vram, 8, {6});
  scripted all_hidden(v, {1});
  CHECK(kread(v, 8, 1, consumer::peer) == std::vector<uint8_t>{0});
}

TEST_CASE("rdma visibility: once visible a write stays visible", "[gpu][visibility]") {
  memory::backing_store vram(1 << 20);
  rdma_visibility v(vram, writes_ordering::none);
  v.set_kernels_observe(true);
  land(v, vram, 0, bytes(16, 4));
  scripted s(v, {0, 1, 1, 1});
  CHECK(kread(v, 0, 16, consumer::owner) == bytes(16, 4));
  for (int i = 0; i < 3; ++i) CHECK(kread(v, 0, 16, consumer::owner) == bytes(16, 4));
  CHECK(s.made() == 1);
  CHECK(v.stats().stale_reads == 0);
}

TEST_CASE("rdma visibility: each sector is decided once per consumer", "[gpu][visibility]") {
  memory::backing_store vram(1 << 20);
  rdma_visibility v(vram, writes_ordering::none);
  v.set_kernels_observe(true);
  land(v, vram, 0, bytes(64, 8));
  scripted s(v, {1, 1, 0});
  for (int i = 0; i < 5; ++i) CHECK(kread(v, 0, 4, consumer::owner) == bytes(4, 0));  // polling
  CHECK(s.made() == 1);
  CHECK(kread(v, 0, 64, consumer::owner) == bytes(64, 0));  // one more: sector 1
  CHECK(s.made() == 2);
  CHECK(kread(v, 0, 4, consumer::peer) == bytes(4, 8));  // the peer decides on its own
  CHECK(s.made() == 3);
  CHECK(v.stats().stale_reads == 6);
}

TEST_CASE("rdma visibility: cpu_sync and flush cover only writes landed before them",
          "[gpu][visibility]") {
  memory::backing_store vram(1 << 20);
  rdma_visibility v(vram, writes_ordering::none);
  v.set_kernels_observe(true);
  scripted s(v, {1, 1, 1, 1, 1, 1});

  SECTION("cpu_sync") {
    land(v, vram, 0, bytes(4, 1));
    CHECK(kread(v, 0, 4, consumer::owner) == bytes(4, 0));
    v.cpu_sync();
    CHECK(v.pending() == 0);
    land(v, vram, 32, bytes(4, 2));
    CHECK(kread(v, 0, 4, consumer::owner) == bytes(4, 1));  // landed before: visible
    CHECK(kread(v, 32, 4, consumer::peer) == bytes(4, 0));  // landed after: still pending
    CHECK(v.pending() == 1);
    CHECK(v.stats().syncs == 1);
  }
  SECTION("flush") {
    land(v, vram, 0, bytes(4, 1));
    CHECK(kread(v, 0, 4, consumer::owner) == bytes(4, 0));
    v.flush(writes_ordering::all_devices);
    land(v, vram, 32, bytes(4, 2));
    CHECK(kread(v, 0, 4, consumer::owner) == bytes(4, 1));
    CHECK(kread(v, 32, 4, consumer::owner) == bytes(4, 0));
    CHECK(v.pending() == 1);
    CHECK(v.stats().flushes == 1);
  }
}

TEST_CASE("rdma visibility: the ordering attribute and the flush scope name who sees writes",
          "[gpu][visibility]") {
  // For each attribute value: does a kernel of each consumer see a stale value when every
  // choice says "not yet", after the landing, after a flush to the owner, after one to all?
  struct row {
    writes_ordering ordering;
    bool owner_stale, peer_stale, peer_stale_after_owner_flush;
  };
  for (row r : {row{writes_ordering::none, true, true, true},
                row{writes_ordering::owner, false, true, true},
                row{writes_ordering::all_devices, false, false, false}}) {
    CAPTURE(int(r.ordering));
    memory::backing_store vram(1 << 20);
    rdma_visibility v(vram, r.ordering);
    v.set_kernels_observe(true);
    scripted s(v, {1, 1, 1, 1, 1, 1, 1, 1});
    auto stale = [&](uint64_t at, consumer c) { return kread(v, at, 4, c) != bytes(4, 1); };
    for (uint64_t at : {0, 32, 64}) land(v, vram, at, bytes(4, 1));
    CHECK(stale(0, consumer::owner) == r.owner_stale);
    CHECK(stale(0, consumer::peer) == r.peer_stale);
    v.flush(writes_ordering::owner);
    CHECK_FALSE(stale(32, consumer::owner));
    CHECK_FALSE(stale(0, consumer::owner));  // a hidden sector too
    CHECK(stale(32, consumer::peer) == r.peer_stale_after_owner_flush);
    v.flush(writes_ordering::all_devices);
    CHECK_FALSE(stale(64, consumer::peer));
    CHECK_FALSE(stale(0, consumer::peer));
    CHECK(v.pending() == 0);
    CHECK(v.stats().landed_pending == (r.ordering == writes_ordering::all_devices ? 0 : 3));
  }
}

TEST_CASE("rdma visibility: a kernel's own store supersedes pending writes", "[gpu][visibility]") {
  memory::backing_store vram(1 << 20);
  rdma_visibility v(vram, writes_ordering::none);
  v.set_kernels_observe(true);
  scripted s(v, {1, 1});
  land(v, vram, 0, bytes(8, 1));
  CHECK(kread(v, 0, 8, consumer::owner) == bytes(8, 0));
  v.kernel_write(0, bytes(4, 9));
  CHECK(kread(v, 0, 8, consumer::owner) == std::vector<uint8_t>{9, 9, 9, 9, 0, 0, 0, 0});
  CHECK(v.pending() == 1);
  v.kernel_write(4, bytes(4, 9));
  CHECK(v.pending() == 0);
  CHECK(kread(v, 0, 8, consumer::peer) == bytes(8, 9));
  CHECK(s.made() == 1);  // nothing pending was left for the peer to decide
}

TEST_CASE("rdma visibility: without kernels that observe nothing is recorded",
          "[gpu][visibility]") {
  memory::backing_store vram(1 << 20);
  rdma_visibility v(vram, writes_ordering::none);
  land(v, vram, 0, bytes(4096, 3));
  CHECK(v.pending() == 0);  // an ordinary run keeps no records
  CHECK(kread(v, 0, 64, consumer::owner) == bytes(64, 3));
  v.set_kernels_observe(true);
  land(v, vram, 8192, bytes(64, 4));
  CHECK(v.pending() == 2);
}

TEST_CASE("rdma visibility: each GPU rule turned off changes what a kernel may see",
          "[gpu][visibility][mutation]") {
  // The rules a litmus mutation turns off (p2psim litmus --mutate): with GPU:writes-ordering
  // off the attribute covers nobody; with GPU:cpu-sync off a CPU sync shows nothing; with
  // GPU:flush off a flush shows nothing. The kernel is scripted to miss the sector (choice 1).
  memory::backing_store vram(1 << 20);
  auto hidden_after = [&](writes_ordering o, pcie::order_rule off, auto&& between) {
    rdma_visibility v(vram, o);
    v.set_kernels_observe(true);
    pcie::ordering_rules rules;
    rules.disable(off);
    v.set_rules(&rules);
    vram.write(0, bytes(32, 0));
    land(v, vram, 0, bytes(32, 9));
    between(v);
    scripted s(v, {1});
    return kread(v, 0, 32, consumer::owner) != bytes(32, 9);
  };
  auto nothing = [](rdma_visibility&) {};
  // All rules in force (a rule that is not about this case turned off): the owner's kernel sees
  // the write under `owner`, after a CPU sync, after a flush to the owner.
  CHECK_FALSE(hidden_after(writes_ordering::owner, pcie::order_rule::p_p, nothing));
  CHECK(hidden_after(writes_ordering::owner, pcie::order_rule::gpu_writes_ordering, nothing));
  CHECK_FALSE(hidden_after(writes_ordering::none, pcie::order_rule::p_p,
                           [](rdma_visibility& v) { v.cpu_sync(); }));
  CHECK(hidden_after(writes_ordering::none, pcie::order_rule::gpu_cpu_sync,
                     [](rdma_visibility& v) { v.cpu_sync(); }));
  CHECK_FALSE(hidden_after(writes_ordering::none, pcie::order_rule::p_p,
                           [](rdma_visibility& v) { v.flush(writes_ordering::owner); }));
  CHECK(hidden_after(writes_ordering::none, pcie::order_rule::gpu_flush,
                     [](rdma_visibility& v) { v.flush(writes_ordering::owner); }));
}
