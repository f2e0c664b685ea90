// How copies on several streams share a GPU: k host copies of one direction, each on its own
// stream, and when each of them ends. Host memory is pinned. Two ways to start them:
//
//   staggered  the copies are submitted one after the other behind an event on stream 0; each
//              starts when its submission reaches the GPU, as a program's would;
//   gated      stream 0 first runs a kernel that spins for 200 us and every stream waits for
//              the event after it, so all k copies are queued before any may start: which of
//              them the engines run at once, and which wait, shows in their ends.
//
// One line per start, direction, size and k (1 to 6):
//
//   start dir bytes k end_us[0] ... end_us[k-1]
//
// end_us[i] is the median, over the repetitions after two warm-ups, of copy i's end (in
// submission order) after the start event (gated: after the gate's event). If the k copies
// share the path evenly they end together at about k times one copy's time; if an engine
// runs one copy after another, their ends step. Staggered starts add a line
//
//   own dir bytes k own_us[0] ... own_us[k-1]
//
// with each copy timed between events of its own stream, recorded just before and after it
// (the copy's time from its call, as a single copy between events is timed).
//
// Last, which stream an engine serves next when several have copies queued: behind the gate,
// stream 0 gets three copies of 4 MiB host to device, then stream 1 three, and the line
//
//   turns h2d 4194304 6 end_us of 0a 0b 0c 1a 1b 1c
//
// shows whether the engine takes them in the order they came (0a 0b 0c 1a 1b 1c) or by turns.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "probe_common.h"

namespace {

constexpr int k_most = 6, k_warmups = 2;

__global__ void spin(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

struct buffers {
  std::vector<char*> host, dev;
  std::vector<cudaStream_t> streams;
};

// Copy i's end after the start, then (staggered) its time between its own stream's events,
// in microseconds, for one repetition.
std::vector<double> run_once(const buffers& b, bool up, size_t bytes, int k, bool gated,
                             long long spin_cycles) {
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t start;
  CHECK(cudaEventCreate(&start));
  if (gated) spin<<<1, 1, 0, b.streams[0]>>>(spin_cycles);
  CHECK(cudaEventRecord(start, b.streams[0]));
  for (int i = 1; i < k; ++i) CHECK(cudaStreamWaitEvent(b.streams[i], start, 0));
  std::vector<cudaEvent_t> ends(k), befores(k);
  for (int i = 0; i < k; ++i) {
    CHECK(cudaEventCreate(&befores[i]));
    CHECK(cudaEventRecord(befores[i], b.streams[i]));
    CHECK(cudaMemcpyAsync(up ? b.dev[i] : b.host[i], up ? b.host[i] : b.dev[i], bytes,
                          up ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, b.streams[i]));
    CHECK(cudaEventCreate(&ends[i]));
    CHECK(cudaEventRecord(ends[i], b.streams[i]));
  }
  std::vector<double> us(2 * k);
  for (int i = 0; i < k; ++i) {
    float ms = 0, own = 0;
    CHECK(cudaEventSynchronize(ends[i]));
    CHECK(cudaEventElapsedTime(&ms, start, ends[i]));
    CHECK(cudaEventElapsedTime(&own, befores[i], ends[i]));
    us[i] = ms * 1e3;
    us[k + i] = own * 1e3;
    CHECK(cudaEventDestroy(ends[i]));
    CHECK(cudaEventDestroy(befores[i]));
  }
  CHECK(cudaEventDestroy(start));
  return us;
}

}  // namespace

int main() {
  cudaDeviceProp p;
  CHECK(cudaGetDeviceProperties(&p, 0));
  std::printf("# device 0: %s, %d copy engines (asyncEngineCount)\n", p.name, p.asyncEngineCount);
  const size_t most = 64ull << 20;
  buffers b;
  b.host.resize(k_most);
  b.dev.resize(k_most);
  b.streams.resize(k_most);
  for (int i = 0; i < k_most; ++i) {
    CHECK(cudaMallocHost(&b.host[i], most));
    CHECK(cudaMalloc(&b.dev[i], most));
    CHECK(cudaMemset(b.dev[i], 1, most));
    CHECK(cudaStreamCreateWithFlags(&b.streams[i], cudaStreamNonBlocking));
  }
  int khz = 0;
  CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  const long long spin_cycles = 200LL * khz / 1000;  // 200 us at the SM clock
  std::printf("# start dir bytes k end_us[0..k-1] (median after %d warm-ups)\n", k_warmups);
  const size_t sizes[] = {256u << 10, 4u << 20, 64u << 20};
  for (int gated = 0; gated < 2; ++gated)
    for (int up = 1; up >= 0; --up)
      for (size_t bytes : sizes) {
        const int reps = bytes >= (64u << 20) ? 15 : 101;
        for (int k = 1; k <= k_most; ++k) {
          std::vector<std::vector<double>> ends(2 * k);
          for (int r = 0; r < k_warmups + reps; ++r) {
            const auto us = run_once(b, up, bytes, k, gated, spin_cycles);
            if (r >= k_warmups)
              for (int i = 0; i < 2 * k; ++i) ends[i].push_back(us[i]);
          }
          const char* dir = up ? "h2d" : "d2h";
          std::printf("%-9s %s %10zu %d", gated ? "gated" : "staggered", dir, bytes, k);
          for (int i = 0; i < k; ++i) std::printf(" %9.2f", median(ends[i]));
          std::printf("\n");
          if (!gated) {
            std::printf("%-9s %s %10zu %d", "own", dir, bytes, k);
            for (int i = k; i < 2 * k; ++i) std::printf(" %9.2f", median(ends[i]));
            std::printf("\n");
          }
          std::fflush(stdout);
        }
      }
  // Turns: three copies on stream 0, then three on stream 1, all behind the gate.
  {
    const size_t bytes = 4u << 20;
    std::vector<std::vector<double>> ends(6);
    for (int r = 0; r < k_warmups + 21; ++r) {
      CHECK(cudaDeviceSynchronize());
      cudaEvent_t start, e[6];
      CHECK(cudaEventCreate(&start));
      spin<<<1, 1, 0, b.streams[0]>>>(spin_cycles);
      CHECK(cudaEventRecord(start, b.streams[0]));
      CHECK(cudaStreamWaitEvent(b.streams[1], start, 0));
      for (int i = 0; i < 6; ++i) {
        const int st = i / 3;
        CHECK(cudaMemcpyAsync(b.dev[i], b.host[i], bytes, cudaMemcpyHostToDevice, b.streams[st]));
        CHECK(cudaEventCreate(&e[i]));
        CHECK(cudaEventRecord(e[i], b.streams[st]));
      }
      for (int i = 0; i < 6; ++i) {
        float ms = 0;
        CHECK(cudaEventSynchronize(e[i]));
        CHECK(cudaEventElapsedTime(&ms, start, e[i]));
        if (r >= k_warmups) ends[i].push_back(ms * 1e3);
        CHECK(cudaEventDestroy(e[i]));
      }
      CHECK(cudaEventDestroy(start));
    }
    std::printf("turns     h2d %10zu 6", bytes);
    for (int i = 0; i < 6; ++i) std::printf(" %9.2f", median(ends[i]));
    std::printf("\n");
  }
  return 0;
}
