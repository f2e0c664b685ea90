// The fixed costs around a copy on a real GPU, which p2psim's copy-engine and CUDA costs are
// set from (tools/hw_probe/README.md). Host memory is pinned. Prints one line per figure,
// each the median of its repetitions after warm-ups:
//
//   event_pair_us      two CUDA events recorded back to back: what event timing adds
//   submit_us <dir>    host time of one cudaMemcpyAsync call of 4 B, the stream idle: the
//                      driver's submission
//   sync_us <dir>      host time of one synchronous cudaMemcpy of 4 B
//   query_sync_us      host time of cudaStreamSynchronize on an idle stream
//   chase_ns vram      one GPU thread's dependent 8 B loads through device memory, per load
//   chase_ns host      the same through pinned, mapped host memory: a PCIe read's round trip
//                      from the GPU, plus what a load spends inside the GPU (the vram line)
//   single_after_us <dir> <gap>  one 4 B copy between events, issued when the previous copy
//                      on the stream finished <gap> us before it (0: back to back)
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include "probe_common.h"

namespace {

using clk = std::chrono::steady_clock;

double us_since(clk::time_point t0) {
  return std::chrono::duration<double, std::micro>(clk::now() - t0).count();
}

// Follows `hops` links of the chain starting at `p[0]`; the loads bypass the GPU's caches
// (ld.global.cv), so each one goes to the memory behind `p`. Writes the end so it is kept.
__device__ uint64_t globaltimer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__global__ void chase(const uint64_t* p, int hops, uint64_t* out, uint64_t* ns) {
  uint64_t i = 0;
  const uint64_t t0 = globaltimer_ns();
  for (int h = 0; h < hops; ++h) i = __ldcv(p + i);
  *ns = globaltimer_ns() - t0;
  *out = i;
}

// A chain of 8 B links, one per 4 KiB page of `bytes`, in random order.
std::vector<uint64_t> chain(size_t bytes) {
  const size_t stride = 4096 / sizeof(uint64_t), n = bytes / 4096;
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin() + 1, order.end(), std::mt19937_64(1));
  std::vector<uint64_t> links(bytes / sizeof(uint64_t), 0);
  for (size_t k = 0; k < n; ++k) links[order[k] * stride] = order[(k + 1) % n] * stride;
  return links;
}

double chase_ns(const uint64_t* p) {
  uint64_t *out, *ns;
  CHECK(cudaMalloc(&out, sizeof(uint64_t)));
  CHECK(cudaMallocManaged(&ns, sizeof(uint64_t)));
  const int hops = 2000;
  std::vector<double> per;
  for (int rep = 0; rep < 7; ++rep) {
    chase<<<1, 1>>>(p, hops, out, ns);
    CHECK(cudaDeviceSynchronize());
    if (rep >= 2) per.push_back(double(*ns) / hops);
  }
  CHECK(cudaFree(out));
  CHECK(cudaFree(ns));
  return median(per);
}

}  // namespace

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# device 0: %s\n", prop.name);
  char *host, *dev;
  CHECK(cudaMallocHost(&host, 1 << 20));
  CHECK(cudaMalloc(&dev, 1 << 20));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  const int reps = 2000;

  std::vector<double> v;
  for (int r = 0; r < reps; ++r) {
    CHECK(cudaEventRecord(a, s));
    CHECK(cudaEventRecord(b, s));
    CHECK(cudaEventSynchronize(b));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    if (r >= 10) v.push_back(ms * 1e3);
  }
  std::printf("event_pair_us %.3f\n", median(v));

  for (int d = 0; d < 2; ++d) {
    const char* dn = d ? "d2h" : "h2d";
    std::vector<double> sub, sync;
    for (int r = 0; r < reps; ++r) {
      auto t0 = clk::now();
      if (d)
        CHECK(cudaMemcpyAsync(host, dev, 4, cudaMemcpyDeviceToHost, s));
      else
        CHECK(cudaMemcpyAsync(dev, host, 4, cudaMemcpyHostToDevice, s));
      double t = us_since(t0);
      CHECK(cudaStreamSynchronize(s));
      if (r >= 10) sub.push_back(t);
      t0 = clk::now();
      if (d)
        CHECK(cudaMemcpy(host, dev, 4, cudaMemcpyDeviceToHost));
      else
        CHECK(cudaMemcpy(dev, host, 4, cudaMemcpyHostToDevice));
      if (r >= 10) sync.push_back(us_since(t0));
    }
    std::printf("submit_us %s %.3f\n", dn, median(sub));
    std::printf("sync_us %s %.3f\n", dn, median(sync));
  }
  v.clear();
  for (int r = 0; r < reps; ++r) {
    auto t0 = clk::now();
    CHECK(cudaStreamSynchronize(s));
    if (r >= 10) v.push_back(us_since(t0));
  }
  std::printf("query_sync_us %.3f\n", median(v));

  // One copy between events after the previous one on the stream finished `gap` us before
  // (a kernel that spins keeps the stream busy that long), or right behind it.
  for (int d = 0; d < 2; ++d) {
    const char* dn = d ? "d2h" : "h2d";
    for (int back_to_back = 1; back_to_back >= 0; --back_to_back) {
      std::vector<double> t;
      for (int r = 0; r < 500; ++r) {
        if (back_to_back) {  // the previous copy still running when the events are queued
          if (d)
            CHECK(cudaMemcpyAsync(host, dev, 4, cudaMemcpyDeviceToHost, s));
          else
            CHECK(cudaMemcpyAsync(dev, host, 4, cudaMemcpyHostToDevice, s));
        }
        CHECK(cudaEventRecord(a, s));
        if (d)
          CHECK(cudaMemcpyAsync(host, dev, 4, cudaMemcpyDeviceToHost, s));
        else
          CHECK(cudaMemcpyAsync(dev, host, 4, cudaMemcpyHostToDevice, s));
        CHECK(cudaEventRecord(b, s));
        CHECK(cudaEventSynchronize(b));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        if (r >= 10) t.push_back(ms * 1e3);
      }
      std::printf("single_after_us %s %s %.3f\n", dn, back_to_back ? "queued" : "idle",
                  median(t));
    }
  }

  const size_t bytes = 256u << 20;  // larger than the L2, so cached lines do not help
  std::vector<uint64_t> links = chain(bytes);
  uint64_t* vram;
  CHECK(cudaMalloc(&vram, bytes));
  CHECK(cudaMemcpy(vram, links.data(), bytes, cudaMemcpyHostToDevice));
  std::printf("chase_ns vram %.1f\n", chase_ns(vram));
  CHECK(cudaFree(vram));
  uint64_t *pinned, *mapped;
  CHECK(cudaHostAlloc(&pinned, bytes, cudaHostAllocMapped));
  std::copy(links.begin(), links.end(), pinned);
  CHECK(cudaHostGetDevicePointer(&mapped, pinned, 0));
  std::printf("chase_ns host %.1f\n", chase_ns(mapped));
  CHECK(cudaFreeHost(pinned));
  return 0;
}
