#include "sim/core/copy_engine_executor.h"

#include <sysc/kernel/sc_dynamic_processes.h>  // sc_spawn
#include <cstring>

#include "models/transport/sim_clock.h"
#include "models/transport/stream_log.h"

namespace p2psim::core {

using namespace sc_core;

namespace {
// Where in a socket's memory the driver stages pageable host buffers: its last 256 MiB.
constexpr uint64_t staging_bytes = 256ull << 20;

// A cost of `ns`; none at all (not even a delta cycle) when it is 0, so GPUs without copy
// costs run exactly as before they existed.
void spend(double ns) {
  if (ns > 0) wait(sc_time(ns, SC_NS));
}
}  // namespace

copy_engine_executor::copy_engine_executor(fabric_system& sys, std::vector<gpu::gpu*> gpus)
    : m_sys(sys), m_gpus(std::move(gpus)) {}

root_complex::root_complex& copy_engine_executor::socket_of(int gpu) {
  const std::string& name = m_sys.addresses().socket_of.at(std::string(m_gpus.at(gpu)->basename()));
  return *m_sys.find_socket(name);
}

// The GPU whose copy engine runs a copy: the device side's (the source's between two GPUs).
int copy_engine_executor::engine_gpu(const cuda::copy_request& r) {
  return r.src_gpu >= 0 ? r.src_gpu : r.dst_gpu;
}

// The first queue in `scope` (every queue when null) with a copy not finished, or nullptr.
const copy_engine_executor::queue* copy_engine_executor::first_pending(
    const cuda::sync_request* scope) const {
  for (const auto& [key, q] : m_queues) {
    if (q.finished == q.issued) continue;
    if (!scope) return &q;
    auto [pid, ctx, stream] = key;
    if (pid == scope->pid && ctx == scope->ctx && (scope->whole_context || stream == scope->stream))
      return &q;
  }
  return nullptr;
}

// One copy-engine job between VRAM and the staging buffer, waited for to the last byte.
void copy_engine_executor::engine_dma(int gpu, bool write, uint64_t host_offset,
                                      const cuda::copy_request& r, bool host_is_src) {
  gpu::gpu& g = *m_gpus.at(gpu);
  root_complex::root_complex& rc = socket_of(gpu);
  const uint64_t host_bus = rc.params().memory.base + host_offset;
  dma::dma_job job;
  job.write = write;  // write: VRAM -> host (MWr); read: host -> VRAM (MRd)
  for (const auto& s : r.segments) {
    uint64_t vram = host_is_src ? s.dst : s.src;
    uint64_t host = host_is_src ? s.src : s.dst;
    job.segments.push_back({host_bus + host, s.bytes, vram});
  }
  transport::stream_log& log = m_sys.streams();
  job.stream = log.open(r.bytes);
  const uint32_t id = job.stream;
  log[id].submit_ps = transport::now_ps();
  g.copy_engine().submit(std::move(job));
  transport::wait_until_landed(log, id);
}

void copy_engine_executor::run(const cuda::copy_request& r, const std::vector<uint8_t>& staged) {
  using cuda::copy_kind;
  if (r.kind == copy_kind::host_to_device) {
    auto& rc = socket_of(r.dst_gpu);
    uint64_t staging = rc.memory().capacity() - staging_bytes;
    rc.memory().write(staging, staged);
    engine_dma(r.dst_gpu, false, staging, r, true);
  } else if (r.kind == copy_kind::device_to_host) {
    auto& rc = socket_of(r.src_gpu);
    uint64_t staging = rc.memory().capacity() - staging_bytes;
    engine_dma(r.src_gpu, true, staging, r, false);
    std::vector<uint8_t> bytes(r.bytes);
    rc.memory().read(staging, bytes);
    std::memcpy(r.host_dst, bytes.data(), r.bytes);
  } else if (r.src_gpu != r.dst_gpu) {
    // Across GPUs without peer access the driver stages through host memory: the source
    // GPU's copy engine writes the bytes to the staging buffer, the destination's reads them.
    cuda::copy_request out = r, in = r;
    out.segments.clear();
    in.segments.clear();
    uint64_t host = 0;
    for (const auto& seg : r.segments) {
      out.segments.push_back({seg.src, host, seg.bytes});
      in.segments.push_back({host, seg.dst, seg.bytes});
      host += seg.bytes;
    }
    auto& src_rc = socket_of(r.src_gpu);
    auto& dst_rc = socket_of(r.dst_gpu);
    uint64_t src_staging = src_rc.memory().capacity() - staging_bytes;
    uint64_t dst_staging = dst_rc.memory().capacity() - staging_bytes;
    engine_dma(r.src_gpu, true, src_staging, out, false);
    if (&src_rc != &dst_rc) {  // the other socket's staging buffer (the CPU copies it over)
      std::vector<uint8_t> bytes(r.bytes);
      src_rc.memory().read(src_staging, bytes);
      dst_rc.memory().write(dst_staging, bytes);
    }
    engine_dma(r.dst_gpu, false, dst_staging, in, true);
  } else {
    // Within one GPU: VRAM to VRAM through the copy engine, no PCIe traffic. The bytes land
    // when the copy completes (a reader before then sees the old data: guide 5.7).
    auto& src = *m_gpus.at(r.src_gpu);
    auto& dst = *m_gpus.at(r.dst_gpu);
    std::vector<std::vector<uint8_t>> bytes;
    for (const auto& seg : r.segments) {
      bytes.emplace_back(seg.bytes);
      src.vram().read(seg.src, bytes.back());
    }
    double gbs = src.params().vram().bandwidth_gbs;
    if (gbs > 0) wait(sc_time(2.0 * r.bytes / gbs, SC_NS));  // read and write each byte
    for (size_t i = 0; i < r.segments.size(); ++i) dst.vram().write(r.segments[i].dst, bytes[i]);
  }
  ++m_copies;
  m_bytes += r.bytes;
}

void copy_engine_executor::copy(const cuda::copy_request& r) {
  if (r.bytes > staging_bytes &&
      (r.kind != cuda::copy_kind::device_to_device || r.src_gpu != r.dst_gpu))
    throw std::runtime_error("a host copy larger than the 256 MiB staging buffer");
  const int gpu = engine_gpu(r);
  const gpu::gpu_params& engine = m_gpus.at(gpu)->params();
  const size_t index = m_times.size();
  const std::string gpu_name(m_gpus.at(gpu)->basename());
  m_times.push_back(
      {transport::now_ps(), 0, 0, gpu_name, m_sys.addresses().socket_of.at(gpu_name)});
  // The source bytes of a host copy are taken now: the application may reuse its buffer.
  std::vector<uint8_t> staged;
  if (r.kind == cuda::copy_kind::host_to_device)
    staged.assign(static_cast<const uint8_t*>(r.host_src),
                  static_cast<const uint8_t*>(r.host_src) + r.bytes);
  spend(engine.copy_submit_ns);  // the driver, in the caller's thread
  const stream_key key{r.pid, r.ctx, r.stream};
  queue& q = m_queues[key];
  q.gpu = gpu;
  const uint64_t ticket = q.issued++;
  // From the doorbell: the engine fetches the copy while the copies ahead of it on the stream
  // run, so it starts at the later of its launch and their completion.
  auto body = [this, r, staged, ticket, key, index, &engine] {
    spend(engine.copy_launch_ns);
    while (m_queues[key].finished != ticket) wait(m_progress);  // stream order
    run(r, staged);
    spend(engine.copy_completion_ns);
    m_times[index].complete_ps = transport::now_ps();
    ++m_queues[key].finished;
    m_progress.notify(SC_ZERO_TIME);
  };
  if (r.complete_on_return) {
    body();
    spend(engine.copy_sync_return_ns);
  } else {
    sc_spawn(body);  // returns once queued; the copy runs on (guide 5.7)
  }
  m_times[index].return_ps = transport::now_ps();
}

void copy_engine_executor::drain() {
  while (first_pending(nullptr)) wait(m_progress);
}

void copy_engine_executor::synchronize(const cuda::sync_request& r) {
  // The caller pays the wake-up of the GPU it last waited on, once it waited at all.
  int waited_on = -1;
  for (const queue* q; (q = first_pending(&r));) {
    waited_on = q->gpu;
    wait(m_progress);
  }
  if (waited_on >= 0) spend(m_gpus.at(waited_on)->params().copy_sync_return_ns);
}

}  // namespace p2psim::core
