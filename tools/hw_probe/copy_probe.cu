// Host <-> device copy curves and small-copy latency of a real GPU, the measurements
// p2psim's copy path is checked against (tools/hw_probe/README.md). Host memory is pinned
// (cudaMallocHost), as in nvbandwidth and p2pBandwidthLatencyTest. For every size and
// direction (host to device, device to host, both at once) it prints three figures:
//
//   single  one cudaMemcpyAsync between two CUDA events: the copy engine's time for one copy,
//           its start and completion included (what a size curve of single copies shows)
//   stream  `batch` copies back to back between two events, divided by their count: the
//           steady rate, with the per-copy costs overlapped as far as the engine allows
//   sync    a synchronous cudaMemcpy timed by the host's clock: what a program waits,
//           submission and completion in the driver included (not for both at once: nan)
//
// Each is the median of its repetitions, after two warm-up runs. Prints one row per size.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_common.h"

namespace {

struct buffers {
  char* host_src;
  char* host_dst;
  char* dev_a;
  char* dev_b;
};

enum class dir { h2d, d2h, both };
const char* name(dir d) { return d == dir::h2d ? "h2d" : d == dir::d2h ? "d2h" : "both"; }

// Enqueues `count` copies of `bytes` in direction `d` (both: one of each way, each on its own
// stream), bracketed by events; returns the elapsed microseconds of the later stream.
double timed_copies(const buffers& b, size_t bytes, dir d, int count, cudaStream_t s0,
                    cudaStream_t s1, cudaEvent_t start, cudaEvent_t end0, cudaEvent_t end1) {
  CHECK(cudaEventRecord(start, s0));
  CHECK(cudaStreamWaitEvent(s1, start, 0));
  for (int i = 0; i < count; ++i) {
    if (d != dir::d2h) CHECK(cudaMemcpyAsync(b.dev_a, b.host_src, bytes, cudaMemcpyHostToDevice, s0));
    if (d != dir::h2d)
      CHECK(cudaMemcpyAsync(b.host_dst, b.dev_b, bytes, cudaMemcpyDeviceToHost,
                            d == dir::both ? s1 : s0));
  }
  CHECK(cudaEventRecord(end0, s0));
  CHECK(cudaEventRecord(end1, s1));
  CHECK(cudaEventSynchronize(end0));
  CHECK(cudaEventSynchronize(end1));
  float ms0 = 0, ms1 = 0;
  CHECK(cudaEventElapsedTime(&ms0, start, end0));
  CHECK(cudaEventElapsedTime(&ms1, start, end1));
  return 1000.0 * std::max(ms0, d == dir::both ? ms1 : 0.0f);
}

double sync_copy_us(const buffers& b, size_t bytes, dir d) {
  auto t0 = std::chrono::steady_clock::now();
  if (d != dir::d2h) CHECK(cudaMemcpy(b.dev_a, b.host_src, bytes, cudaMemcpyHostToDevice));
  if (d != dir::h2d) CHECK(cudaMemcpy(b.host_dst, b.dev_b, bytes, cudaMemcpyDeviceToHost));
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(t1 - t0).count();
}

}  // namespace

int main() {
  const size_t max_bytes = size_t(1) << 30;
  int dev = 0;
  CHECK(cudaSetDevice(dev));
  cudaDeviceProp p;
  CHECK(cudaGetDeviceProperties(&p, dev));
  int driver = 0, runtime = 0;
  CHECK(cudaDriverGetVersion(&driver));
  CHECK(cudaRuntimeGetVersion(&runtime));
  char bus[32] = {};
  CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, dev));
  std::printf("# device %d: %s, PCI %s, %d copy engines (asyncEngineCount), %.1f GiB\n", dev,
              p.name, bus, p.asyncEngineCount, p.totalGlobalMem / double(1 << 30));
  std::printf("# CUDA driver API %d, runtime %d\n", driver, runtime);

  buffers b{};
  CHECK(cudaMallocHost(&b.host_src, max_bytes));
  CHECK(cudaMallocHost(&b.host_dst, max_bytes));
  CHECK(cudaMalloc(&b.dev_a, max_bytes));
  CHECK(cudaMalloc(&b.dev_b, max_bytes));
  for (size_t i = 0; i < max_bytes; i += 4096) b.host_src[i] = char(i >> 12);
  CHECK(cudaMemset(b.dev_b, 1, max_bytes));
  cudaStream_t s0, s1;
  CHECK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  cudaEvent_t start, end0, end1;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&end0));
  CHECK(cudaEventCreate(&end1));

  std::vector<size_t> sizes = {4, 64, 256, 1024};
  for (size_t s = 4096; s <= max_bytes; s *= 2) sizes.push_back(s);
  std::printf(
      "# bytes: per copy (both: each way). us: median microseconds per copy (both: per pair of "
      "copies). GB/s: 1e9 bytes per second, both directions summed for 'both'.\n");
  std::printf("%-4s %12s %12s %10s %12s %10s %12s %10s %6s %6s\n", "dir", "bytes", "single_us",
              "single_GBs", "stream_us", "stream_GBs", "sync_us", "sync_GBs", "reps", "batch");
  for (dir d : {dir::h2d, dir::d2h, dir::both}) {
    for (size_t bytes : sizes) {
      // About 2 GiB moved per figure for large sizes, at least 20 and at most 1000 repetitions.
      const int reps = int(std::clamp<size_t>((size_t(2) << 30) / bytes, 20, 1000));
      const int batch = int(std::clamp<size_t>((size_t(256) << 20) / bytes, 4, 100));
      std::vector<double> single, stream, sync;
      for (int i = 0; i < reps + 2; ++i) {
        double one = timed_copies(b, bytes, d, 1, s0, s1, start, end0, end1);
        double many = timed_copies(b, bytes, d, batch, s0, s1, start, end0, end1) / batch;
        double host = d == dir::both ? 0 : sync_copy_us(b, bytes, d);
        if (i < 2) continue;  // warm-up
        single.push_back(one);
        stream.push_back(many);
        sync.push_back(host);
      }
      const double moved = double(bytes) * (d == dir::both ? 2 : 1);
      const double us1 = median(single), usn = median(stream);
      const double uss = d == dir::both ? NAN : median(sync);
      std::printf("%-4s %12zu %12.3f %10.3f %12.3f %10.3f %12.3f %10.3f %6d %6d\n", name(d),
                  bytes, us1, moved / us1 / 1e3, usn, moved / usn / 1e3, uss, moved / uss / 1e3,
                  reps, batch);
      std::fflush(stdout);
    }
  }
  return 0;
}
