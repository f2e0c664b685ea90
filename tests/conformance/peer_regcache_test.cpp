// The registration cache (GPUDirect RDMA 13.3, 5.1 Lazy Unpinning, 5.2 Registration Cache,
// 6.5 Buffer ID Tag Check) over the third-party kernel driver.
#include <catch2/catch.hpp>

#include "models/driver/cuda/cuda.h"
#include "models/driver/peer/regcache.h"
#include "tests/conformance/fixture.h"

using namespace p2psim;

namespace {
constexpr uint64_t MiB = 1ull << 20;

struct cache_world {
  test::world w;
  pci_dev nic{"nic0", 0x0400, nullptr};
  peer::kmd kmd{&nic, false};

  explicit cache_world(uint64_t vram = 512 * MiB) : w(config(vram)) {
    REQUIRE(cuInit(0) == CUDA_SUCCESS);
    CUdevice dev;
    REQUIRE(cuDeviceGet(&dev, 0) == CUDA_SUCCESS);
    CUcontext ctx;
    REQUIRE(cuCtxCreate(&ctx, 0, dev) == CUDA_SUCCESS);
  }
  static test::world_config config(uint64_t vram) {
    test::world_config c;
    c.gpu.vram_bytes = vram;  // BAR1: 256 MiB with 32 MiB reserved (guide 5.5)
    return c;
  }
  CUdeviceptr alloc(uint64_t bytes) {
    CUdeviceptr p = 0;
    REQUIRE(cuMemAlloc(&p, bytes) == CUDA_SUCCESS);
    return p;
  }
};
}  // namespace

TEST_CASE("5.1: with lazy unpinning a reused buffer is pinned once", "[regcache]") {
  cache_world cw;
  peer::regcache cache(cw.kmd, {});
  CUdeviceptr p = cw.alloc(8 * MiB);
  for (int i = 0; i < 5; ++i) {
    peer::kmd_region* r = nullptr;
    REQUIRE(cache.acquire(p + i * MiB, MiB, &r) == 0);  // any part of the allocation
    cache.release(r);
  }
  CHECK(cw.kmd.stats().pins == 1);
  CHECK(cache.stats().misses == 1);
  CHECK(cache.stats().hits == 4);
  CHECK(cw.w.bar1(0).mapped_pages() == 8 * MiB / (64 * 1024));  // still pinned after use
}

TEST_CASE("5.1: without the cache every use pins and unpins", "[regcache]") {
  cache_world cw;
  peer::regcache_params off;
  off.enabled = false;
  peer::regcache cache(cw.kmd, off);
  CUdeviceptr p = cw.alloc(4 * MiB);
  for (int i = 0; i < 5; ++i) {
    peer::kmd_region* r = nullptr;
    REQUIRE(cache.acquire(p, 4 * MiB, &r) == 0);
    cache.release(r);
  }
  CHECK(cw.kmd.stats().pins == 5);
  CHECK(cw.kmd.stats().unpins == 5);
  CHECK(cw.w.bar1(0).mapped_pages() == 0);
  CHECK(cw.w.driver().counters().pin_ns > 0);
}

TEST_CASE("5.1: on BAR1 exhaustion the least recently used entry is evicted and the pin retried",
          "[regcache]") {
  cache_world cw;
  peer::regcache cache(cw.kmd, {});
  CUdeviceptr a = cw.alloc(100 * MiB), b = cw.alloc(100 * MiB), c = cw.alloc(100 * MiB);
  peer::kmd_region* r = nullptr;
  REQUIRE(cache.acquire(a, MiB, &r) == 0);
  cache.release(r);
  REQUIRE(cache.acquire(b, MiB, &r) == 0);
  cache.release(r);
  REQUIRE(cache.acquire(a, MiB, &r) == 0);  // a is now the most recently used
  cache.release(r);
  REQUIRE(cache.acquire(c, MiB, &r) == 0);  // 300 MiB > 224 MiB of BAR1: b must go
  cache.release(r);
  CHECK(cache.stats().enomem_retries == 1);
  CHECK(cache.stats().evictions == 1);
  CHECK(cache.entries() == 2);
  REQUIRE(cache.acquire(a, MiB, &r) == 0);  // still cached
  cache.release(r);
  CHECK(cache.stats().hits == 2);
}

TEST_CASE("5.2: entries in use are never evicted", "[regcache]") {
  cache_world cw;
  peer::regcache cache(cw.kmd, {});
  CUdeviceptr a = cw.alloc(150 * MiB), b = cw.alloc(150 * MiB);
  peer::kmd_region *ra = nullptr, *rb = nullptr;
  REQUIRE(cache.acquire(a, MiB, &ra) == 0);  // held
  CHECK(cache.acquire(b, MiB, &rb) == -ENOMEM);
  cache.release(ra);
  CHECK(cache.acquire(b, MiB, &rb) == 0);
}

TEST_CASE("5.1: a byte limit evicts before BAR1 runs out", "[regcache]") {
  cache_world cw;
  peer::regcache_params p;
  p.max_pinned_bytes = 64 * MiB;
  peer::regcache cache(cw.kmd, p);
  peer::kmd_region* r = nullptr;
  for (int i = 0; i < 4; ++i) {
    REQUIRE(cache.acquire(cw.alloc(32 * MiB), MiB, &r) == 0);
    cache.release(r);
  }
  CHECK(cache.stats().peak_pinned_bytes <= 64 * MiB);
  CHECK(cache.stats().evictions == 2);
  CHECK(cache.stats().enomem_retries == 0);
}

TEST_CASE("6.5: the tag check re-pins a buffer that was freed and reallocated", "[regcache]") {
  cache_world cw;
  peer::regcache cache(cw.kmd, {});
  CUdeviceptr p = cw.alloc(4 * MiB);
  peer::kmd_region* first = nullptr;
  REQUIRE(cache.acquire(p, MiB, &first) == 0);
  cache.release(first);
  REQUIRE(cuMemFree(p) == CUDA_SUCCESS);  // revokes the pin (kernel callback)
  CUdeviceptr q = cw.alloc(4 * MiB);
  REQUIRE(q == p);
  peer::kmd_region* again = nullptr;
  REQUIRE(cache.acquire(q, MiB, &again) == 0);
  CHECK(cache.stats().tag_invalidations == 1);
  CHECK(cache.stats().misses == 2);
  CHECK_FALSE(again->invalidated);
  // The stale entry's revoked region is forgotten by the kernel driver too: however many
  // buffers come and go, it keeps only what the cache holds.
  CHECK(cw.kmd.regions().size() == 1);
  std::vector<peer::bus_segment> segs;
  CHECK(cw.kmd.dma_segments(*again, q, MiB, 0, segs) == 0);
}

TEST_CASE("6.5: without the tag check a stale entry is served and its DMA refused", "[regcache]") {
  cache_world cw;
  peer::regcache_params p;
  p.tag_check = false;
  peer::regcache cache(cw.kmd, p);
  CUdeviceptr ptr = cw.alloc(4 * MiB);
  peer::kmd_region* r = nullptr;
  REQUIRE(cache.acquire(ptr, MiB, &r) == 0);
  cache.release(r);
  REQUIRE(cuMemFree(ptr) == CUDA_SUCCESS);
  REQUIRE(cw.alloc(4 * MiB) == ptr);
  peer::kmd_region* stale = nullptr;
  REQUIRE(cache.acquire(ptr, MiB, &stale) == 0);
  CHECK(stale == r);
  CHECK(stale->invalidated);
  std::vector<peer::bus_segment> segs;
  CHECK(cw.kmd.dma_segments(*stale, ptr, MiB, 0, segs) == -EINVAL);
}

TEST_CASE("6.5: memory that is not a live GPU allocation is refused", "[regcache]") {
  cache_world cw;
  peer::regcache cache(cw.kmd, {});
  peer::kmd_region* r = nullptr;
  int host = 0;
  CHECK(cache.acquire(CUdeviceptr(&host), 4, &r) == -EINVAL);
}

TEST_CASE("5.1: under FIFO the entry pinned first goes first however recently it was used",
          "[regcache]") {
  cache_world cw;
  peer::regcache_params p;
  p.policy = peer::eviction_policy::fifo;
  peer::regcache cache(cw.kmd, p);
  CUdeviceptr a = cw.alloc(100 * MiB), b = cw.alloc(100 * MiB), c = cw.alloc(100 * MiB);
  peer::kmd_region* r = nullptr;
  for (CUdeviceptr x : {a, b, a, c}) {  // a is the most recently used when c needs room
    REQUIRE(cache.acquire(x, MiB, &r) == 0);
    cache.release(r);
  }
  CHECK(cache.stats().evictions == 1);
  REQUIRE(cache.acquire(b, MiB, &r) == 0);  // b stayed: a, pinned first, was evicted
  cache.release(r);
  CHECK(cache.stats().hits == 2);
  REQUIRE(cache.acquire(a, MiB, &r) == 0);  // a must be pinned again
  cache.release(r);
  CHECK(cache.stats().misses == 4);
}

TEST_CASE("5.1: an entry limit evicts the least recently used region", "[regcache]") {
  cache_world cw;
  peer::regcache_params p;
  p.max_entries = 2;
  peer::regcache cache(cw.kmd, p);
  CUdeviceptr a = cw.alloc(MiB), b = cw.alloc(MiB), c = cw.alloc(MiB);
  peer::kmd_region* r = nullptr;
  for (CUdeviceptr x : {a, b, a, c, a}) {
    REQUIRE(cache.acquire(x, MiB, &r) == 0);
    cache.release(r);
  }
  CHECK(cache.entries() == 2);
  CHECK(cache.stats().evictions == 1);  // b, when c came
  CHECK(cache.stats().hits == 2);       // both uses of a after the first
  CHECK(cw.w.bar1(0).mapped_pages() == 2 * MiB / (64 * 1024));
}
