// One copy between CUDA events, in each direction and within device memory, sizes side by
// side: what the copy engine's fixed costs are without PCIe (device to device, within one
// GPU's memory) and what each PCIe direction adds to them (tools/hw_probe/README.md). The
// three kinds take turns at every repetition, so each sees the same machine state. Host
// memory is pinned. One line per kind and size:
//
//   dir bytes single_us min_us p90_us reps
//
// single_us is the median of the repetitions after warm-ups, min_us and p90_us the fastest
// and the 90th percentile. Then copies within device memory alone from 4 MiB to 256 MiB,
// where their rate shows: these repeat on the same buffers, which stay in the L2 cache while
// both fit. Last, `d2d_cold`: copies within device memory from 4 B to 256 MiB, each after a
// kernel has read a buffer of four times the L2's size, so neither buffer is in the L2.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "probe_common.h"

namespace {
enum kind { d2d, h2d, d2h };
const char* name(int k) { return k == d2d ? "d2d" : k == h2d ? "h2d" : "d2h"; }

// Reads every word of `p` (n words), so the L2 holds the end of it and nothing else; one
// thread writes what it read, so the reads are not left out.
__global__ void read_all(const uint4* p, size_t n, uint4* sink) {
  uint4 acc = {0, 0, 0, 0};
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const uint4 v = p[i];
    acc.x ^= v.x, acc.y ^= v.y, acc.z ^= v.z, acc.w ^= v.w;
  }
  if (acc.x == 0x12345678u) *sink = acc;
}
}  // namespace

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# device 0: %s, %d copy engines (asyncEngineCount), L2 %d bytes\n", prop.name,
              prop.asyncEngineCount, prop.l2CacheSize);
  const size_t most = 256u << 20;
  char *host, *dev_a, *dev_b;
  CHECK(cudaMallocHost(&host, most));
  CHECK(cudaMalloc(&dev_a, most));
  CHECK(cudaMalloc(&dev_b, most));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::printf("# dir bytes single_us min_us p90_us reps\n");
  const size_t sizes[] = {4, 4096, 65536, 131072, 262144, 524288, 1u << 20, 2u << 20};
  const int reps = 2000, warm = 20;
  for (size_t bytes : sizes) {
    std::vector<double> t[3];
    for (int r = 0; r < reps; ++r) {
      for (int k = 0; k < 3; ++k) {
        CHECK(cudaEventRecord(a, s));
        if (k == d2d)
          CHECK(cudaMemcpyAsync(dev_b, dev_a, bytes, cudaMemcpyDeviceToDevice, s));
        else if (k == h2d)
          CHECK(cudaMemcpyAsync(dev_a, host, bytes, cudaMemcpyHostToDevice, s));
        else
          CHECK(cudaMemcpyAsync(host, dev_a, bytes, cudaMemcpyDeviceToHost, s));
        CHECK(cudaEventRecord(b, s));
        CHECK(cudaEventSynchronize(b));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        if (r >= warm) t[k].push_back(ms * 1e3);
      }
    }
    for (int k = 0; k < 3; ++k)
      std::printf("%-4s %10zu %10.3f %10.3f %10.3f %6zu\n", name(k), bytes, median(t[k]),
                  percentile(t[k], 0), percentile(t[k], 0.9), t[k].size());
  }
  // 220 copies within device memory, each between two events, after `before` (queued on the
  // stream first); prints the line of those after the warm-ups.
  auto d2d_alone = [&](const char* label, size_t bytes, auto&& before) {
    std::vector<double> t;
    for (int r = 0; r < 220; ++r) {
      before();
      CHECK(cudaEventRecord(a, s));
      CHECK(cudaMemcpyAsync(dev_b, dev_a, bytes, cudaMemcpyDeviceToDevice, s));
      CHECK(cudaEventRecord(b, s));
      CHECK(cudaEventSynchronize(b));
      float ms;
      CHECK(cudaEventElapsedTime(&ms, a, b));
      if (r >= warm) t.push_back(ms * 1e3);
    }
    std::printf("%-4s %10zu %10.3f %10.3f %10.3f %6zu\n", label, bytes, median(t),
                percentile(t, 0), percentile(t, 0.9), t.size());
  };
  for (size_t bytes = 4u << 20; bytes <= most; bytes *= 4) d2d_alone(name(d2d), bytes, [] {});
  const size_t evict_bytes = std::max<size_t>(4 * size_t(prop.l2CacheSize), 64u << 20);
  uint4 *evict, *sink;
  CHECK(cudaMalloc(&evict, evict_bytes));
  CHECK(cudaMemset(evict, 1, evict_bytes));
  CHECK(cudaMalloc(&sink, sizeof(uint4)));
  const size_t cold_sizes[] = {4, 4096, 65536, 1u << 20, 4u << 20, 16u << 20, 64u << 20, most};
  for (size_t bytes : cold_sizes)
    d2d_alone("d2d_cold", bytes, [&] {
      read_all<<<4 * prop.multiProcessorCount, 256, 0, s>>>(evict, evict_bytes / sizeof(uint4),
                                                           sink);
      CHECK(cudaGetLastError());
    });
  return 0;
}
