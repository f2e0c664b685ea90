// Where a GPU's one-way host copy rate stops: one copy engine or the path. Host memory is
// pinned. For each direction it runs 1, 2 and 3 copies of 256 MiB at once, each on its own
// stream (so on separate copy engines where the GPU has them), started together from one
// event, and prints their bytes over the time to the last one's end, in GB/s (1e9 bytes per
// second). If more copies at once move no more, the path limits a copy, not its engine.
// Last, one copy each way at once: both directions summed. Each figure is the median of its
// repetitions after two warm-ups, with their least and greatest.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "probe_common.h"

namespace {

constexpr size_t k_bytes = 256ull << 20;
constexpr int k_streams = 3, k_reps = 9, k_warmups = 2;

struct copy_set {
  std::vector<char*> host, dev;
  std::vector<cudaStream_t> streams;
};

// Runs `ups` host-to-device and `downs` device-to-host copies at once; returns GB/s.
double run_once(const copy_set& c, int ups, int downs, cudaEvent_t start) {
  const int n = ups + downs;
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaEventRecord(start, c.streams[0]));
  for (int i = 1; i < n; ++i) CHECK(cudaStreamWaitEvent(c.streams[i], start, 0));
  std::vector<cudaEvent_t> ends(n);
  for (int i = 0; i < n; ++i) {
    const bool up = i < ups;
    CHECK(cudaMemcpyAsync(up ? c.dev[i] : c.host[i], up ? c.host[i] : c.dev[i], k_bytes,
                          up ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, c.streams[i]));
    CHECK(cudaEventCreate(&ends[i]));
    CHECK(cudaEventRecord(ends[i], c.streams[i]));
  }
  float last_ms = 0;
  for (int i = 0; i < n; ++i) {
    float ms = 0;
    CHECK(cudaEventSynchronize(ends[i]));
    CHECK(cudaEventElapsedTime(&ms, start, ends[i]));
    last_ms = std::max(last_ms, ms);
    CHECK(cudaEventDestroy(ends[i]));
  }
  return double(n) * k_bytes / (last_ms * 1e-3) / 1e9;
}

void report(const copy_set& c, const char* what, int ups, int downs, cudaEvent_t start) {
  std::vector<double> gbs;
  for (int r = 0; r < k_warmups + k_reps; ++r) {
    const double v = run_once(c, ups, downs, start);
    if (r >= k_warmups) gbs.push_back(v);
  }
  const auto [lo, hi] = std::minmax_element(gbs.begin(), gbs.end());
  std::printf("%-8s %7d %10.2f %10.2f %10.2f\n", what, ups + downs, median(gbs), *lo, *hi);
}

}  // namespace

int main() {
  cudaDeviceProp p;
  CHECK(cudaGetDeviceProperties(&p, 0));
  int driver = 0;
  CHECK(cudaDriverGetVersion(&driver));
  std::printf("# device 0: %s, %d copy engines (asyncEngineCount), CUDA driver API %d\n", p.name,
              p.asyncEngineCount, driver);
  std::printf(
      "# %zu MiB per copy, pinned host memory; GB/s: all copies' bytes over the time to "
      "the last one's end, median of %d (least, greatest)\n",
      k_bytes >> 20, k_reps);
  copy_set c;
  c.host.resize(k_streams);
  c.dev.resize(k_streams);
  c.streams.resize(k_streams);
  for (int i = 0; i < k_streams; ++i) {
    CHECK(cudaMallocHost(&c.host[i], k_bytes));
    CHECK(cudaMalloc(&c.dev[i], k_bytes));
    std::memset(c.host[i], 2, k_bytes);
    CHECK(cudaMemset(c.dev[i], 1, k_bytes));
    CHECK(cudaStreamCreateWithFlags(&c.streams[i], cudaStreamNonBlocking));
  }
  cudaEvent_t start;
  CHECK(cudaEventCreate(&start));
  std::printf("%-8s %7s %10s %10s %10s\n", "dir", "copies", "GB/s", "least", "greatest");
  for (int n = 1; n <= k_streams; ++n) report(c, "h2d", n, 0, start);
  for (int n = 1; n <= k_streams; ++n) report(c, "d2h", 0, n, start);
  report(c, "both", 1, 1, start);
  return 0;
}
