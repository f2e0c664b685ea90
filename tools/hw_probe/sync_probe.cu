// How long a synchronous cudaMemcpy waits beyond its copy, by the host thread's wait policy
// (tools/hw_probe/README.md): run once per policy, `sync_probe auto|spin|yield|blocking`.
// For each size and direction it prints the median host time of a synchronous copy, the
// median of the same copy timed by CUDA events, and their difference: what submission and
// the wait for completion add on the host.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "probe_common.h"

int main(int argc, char** argv) {
  const char* policy = argc > 1 ? argv[1] : "auto";
  unsigned flags = cudaDeviceScheduleAuto;
  if (!std::strcmp(policy, "spin")) flags = cudaDeviceScheduleSpin;
  if (!std::strcmp(policy, "yield")) flags = cudaDeviceScheduleYield;
  if (!std::strcmp(policy, "blocking")) flags = cudaDeviceScheduleBlockingSync;
  CHECK(cudaSetDeviceFlags(flags));
  const size_t max_bytes = 64u << 20;
  char *host, *dev;
  CHECK(cudaMallocHost(&host, max_bytes));
  CHECK(cudaMalloc(&dev, max_bytes));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::printf("# policy %s: dir bytes sync_us event_us difference_us\n", policy);
  for (int d = 0; d < 2; ++d) {
    const cudaMemcpyKind kind = d ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
    for (size_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
      void* dst = d ? (void*)host : (void*)dev;
      const void* src = d ? (const void*)dev : (const void*)host;
      const int reps = bytes >= (16u << 20) ? 30 : 200;
      std::vector<double> sync, ev;
      for (int r = 0; r < reps + 3; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        CHECK(cudaMemcpy(dst, src, bytes, kind));
        double us =
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                .count();
        CHECK(cudaEventRecord(a, 0));
        CHECK(cudaMemcpyAsync(dst, src, bytes, kind, 0));
        CHECK(cudaEventRecord(b, 0));
        CHECK(cudaEventSynchronize(b));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        if (r >= 3) sync.push_back(us), ev.push_back(ms * 1e3);
      }
      const double s = median(sync), e = median(ev);
      std::printf("%s %10zu %10.3f %10.3f %8.3f\n", d ? "d2h" : "h2d", bytes, s, e, s - e);
    }
  }
  return 0;
}
