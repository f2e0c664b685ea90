#include "sim/core/copy_engine_executor.h"

#include <sysc/kernel/sc_dynamic_processes.h>  // sc_spawn
#include <algorithm>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>

#include <fmt/format.h>

#include "models/iommu/iommu.h"
#include "models/transport/sim_clock.h"
#include "models/transport/stream_log.h"

namespace p2psim::core {

using namespace sc_core;

namespace {
constexpr uint64_t staging_bytes = host_frames::staging_bytes;

// A cost of `ns`; none at all (not even a delta cycle) when it is 0, so GPUs without copy
// costs run exactly as before they existed.
void spend(double ns) {
  if (ns > 0) wait(sc_time(ns, SC_NS));
}
}  // namespace

// The highest free staging buffer of a socket's memory, its top 256 MiB first, taken until
// the copy is done: copies running at once each stage in one of their own. When the memory
// holds no more, the copy waits for one to be given back (`freed`), as a driver's staging pool
// makes copies wait. A program is refused when a socket has less than one (check_program).
copy_engine_executor::staging_range::staging_range(std::map<uint64_t, uint64_t>& taken,
                                                   uint64_t capacity, sc_core::sc_event& freed)
    : m_taken(taken), m_freed(freed) {
  const uint64_t bytes = staging_bytes;
  for (;;) {
    uint64_t top = capacity;
    for (auto it = taken.rbegin(); it != taken.rend(); ++it) {
      if (top - (it->first + it->second) >= bytes) break;  // fits above this range
      top = it->first;
    }
    if (top >= bytes) {
      offset = top - bytes;
      break;
    }
    if (taken.empty()) throw std::logic_error("a socket memory below the 256 MiB a copy stages in");
    wait(freed);
  }
  taken[offset] = bytes;
}

copy_engine_executor::staging_range::~staging_range() {
  m_taken.erase(offset);
  m_freed.notify(SC_ZERO_TIME);
}

copy_engine_executor::copy_engine_executor(fabric_system& sys, std::vector<gpu::gpu*> gpus,
                                           kernel::user_memory& memory, host_frames& frames)
    : m_sys(sys), m_gpus(std::move(gpus)), m_memory(memory), m_frames(frames) {}

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

// One copy-engine job between VRAM and host memory, waited for to the last byte.
void copy_engine_executor::engine_dma(int gpu, bool write, uint64_t host_bus,
                                      const cuda::copy_request& r, bool host_is_src) {
  gpu::gpu& g = *m_gpus.at(gpu);
  // Behind a translating IOMMU the driver maps the buffer for the GPU first (dma_map), as it
  // maps the pinned memory a copy engine reaches, and the engine uses its I/O address.
  iommu::iommu_domain* domain = m_sys.iommu_for(g.basename());
  std::optional<uint64_t> iova;
  uint64_t span = 0;  // from host_bus: the bytes the job reaches
  for (const auto& s : r.segments) span = std::max(span, (host_is_src ? s.src : s.dst) + s.bytes);
  if (domain && domain->mode() == iommu::iommu_mode::translating) {
    iova = domain->map(host_bus, span, !write, write);
    if (!iova)
      throw std::runtime_error(std::string("the IOMMU has no I/O address space left for ") +
                               g.basename() + "'s copy");
    host_bus = *iova;
  }
  dma::dma_job job;
  job.write = write;  // write: VRAM -> host (MWr); read: host -> VRAM (MRd)
  for (const auto& s : r.segments) {
    uint64_t vram = host_is_src ? s.dst : s.src;
    uint64_t host = host_is_src ? s.src : s.dst;
    job.segments.push_back({host_bus + host, s.bytes, vram});
  }
  note_undelivered(r, run_job(gpu, std::move(job)));
  if (iova) domain->unmap(*iova, span);
}

// Hands `job` to GPU `gpu`'s copy engine and waits for its last byte; returns the bytes it
// lost on the fabric.
uint64_t copy_engine_executor::run_job(int gpu, dma::dma_job job) {
  transport::stream_log& log = m_sys.streams();
  uint64_t bytes = 0;
  for (const auto& s : job.segments) bytes += s.length;
  job.stream = log.open(bytes);
  const uint32_t id = job.stream;
  log[id].submit_ps = transport::now_ps();
  m_gpus.at(gpu)->copy_engine().submit(std::move(job));
  transport::wait_until_landed(log, id);
  return log[id].undelivered_bytes();
}

// Bytes a copy's DMA lost (refused, faulted, dropped): the copy still completes, as on a real
// GPU, but the run says so (exit 1).
void copy_engine_executor::note_undelivered(const cuda::copy_request& r, uint64_t bytes) {
  if (bytes == 0) return;
  const char* kind = r.kind == cuda::copy_kind::host_to_device   ? "host to device"
                     : r.kind == cuda::copy_kind::device_to_host ? "device to host"
                                                                 : "device to device";
  m_faults.push_back(fmt::format(
      "a {} copy of {} bytes on {} lost {} bytes on the fabric (refused, an IOMMU fault or a "
      "link down: the devices' and root complexes' statistics say which)",
      kind, r.bytes, m_gpus.at(engine_gpu(r))->basename(), bytes));
}

void copy_engine_executor::run(const cuda::copy_request& r, const std::vector<uint8_t>& staged,
                               bool returned_early) {
  using cuda::copy_kind;
  if (r.kind != copy_kind::device_to_device && r.host_pinned) {
    pinned_copy(r);
  } else if (r.kind == copy_kind::host_to_device) {
    auto& rc = socket_of(r.dst_gpu);
    staging_range staging(m_frames.taken(rc), rc.memory().capacity(), m_staging_freed);
    rc.memory().write(staging.offset, staged);
    engine_dma(r.dst_gpu, false, rc.params().memory.base + staging.offset, r, true);
  } else if (r.kind == copy_kind::device_to_host) {
    auto& rc = socket_of(r.src_gpu);
    staging_range staging(m_frames.taken(rc), rc.memory().capacity(), m_staging_freed);
    engine_dma(r.src_gpu, true, rc.params().memory.base + staging.offset, r, false);
    std::vector<uint8_t> bytes(r.bytes);
    rc.memory().read(staging.offset, bytes);
    m_memory.write(r.host_dst, bytes);
  } else if (r.src_gpu != r.dst_gpu && r.peer) {
    peer_copy(r);
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
    // Across sockets it takes a staging buffer on each, the sockets in name order, so that
    // copies waiting for buffers never wait for each other.
    const bool cross = &src_rc != &dst_rc;
    const bool src_first = !cross || std::string(src_rc.basename()) < dst_rc.basename();
    auto take = [&](root_complex::root_complex& rc, std::optional<staging_range>& into) {
      into.emplace(m_frames.taken(rc), rc.memory().capacity(), m_staging_freed);
    };
    std::optional<staging_range> src_staging, dst_staging;  // the CPU copies between them
    take(src_first ? src_rc : dst_rc, src_first ? src_staging : dst_staging);
    if (cross) take(src_first ? dst_rc : src_rc, src_first ? dst_staging : src_staging);
    const uint64_t dst_offset = cross ? dst_staging->offset : src_staging->offset;
    engine_dma(r.src_gpu, true, src_rc.params().memory.base + src_staging->offset, out, false);
    if (cross) {
      std::vector<uint8_t> bytes(r.bytes);
      src_rc.memory().read(src_staging->offset, bytes);
      dst_rc.memory().write(dst_offset, bytes);
    }
    engine_dma(r.dst_gpu, false, dst_rc.params().memory.base + dst_offset, in, true);
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
    spend(src.params().copy_within_start_ns);
    const double gbs = src.params().vram_copy_gbs();
    if (gbs > 0) wait(sc_time(r.bytes / gbs, SC_NS));
    land_within(dst, r, bytes, returned_early);
  }
  ++m_copies;
  m_bytes += r.bytes;
}

void copy_engine_executor::land_within(gpu::gpu& dst, const cuda::copy_request& r,
                                       const std::vector<std::vector<uint8_t>>& bytes,
                                       bool returned_early) {
  pcie::choice_source* choices = m_sys.order().choices;
  if (!returned_early || !choices) {
    for (size_t i = 0; i < r.segments.size(); ++i) dst.vram().write(r.segments[i].dst, bytes[i]);
    return;
  }
  // Up to four pieces of whole 32-byte sectors, in copy order; alternative k leaves the last
  // k of them deferred (0: all landed, as timed).
  constexpr uint64_t sector = 32, most_pieces = 4;
  const uint64_t sectors = (r.bytes + sector - 1) / sector;
  const uint64_t pieces = std::min(most_pieces, sectors);
  const uint64_t piece_bytes = (sectors + pieces - 1) / pieces * sector;
  const uint64_t deferred = choices->pick(pieces + 1);
  const uint64_t landed_bytes = std::min(r.bytes, (pieces - deferred) * piece_bytes);
  uint64_t at = 0;  // bytes of the copy before this segment
  for (size_t i = 0; i < r.segments.size(); ++i) {
    const auto& seg = r.segments[i];
    const uint64_t now = landed_bytes > at ? std::min(seg.bytes, landed_bytes - at) : 0;
    if (now) dst.vram().write(seg.dst, std::span(bytes[i]).first(now));
    if (now < seg.bytes)
      m_deferred.push_back({{r.pid, r.ctx, r.stream},
                            &dst,
                            seg.dst + now,
                            std::vector<uint8_t>(bytes[i].begin() + long(now), bytes[i].end())});
    at += seg.bytes;
  }
}

void copy_engine_executor::land_deferred(const cuda::sync_request* scope) {
  std::erase_if(m_deferred, [&](deferred_bytes& d) {
    auto [pid, ctx, stream] = d.stream;
    if (scope && !(pid == scope->pid && ctx == scope->ctx &&
                   (scope->whole_context || stream == scope->stream)))
      return false;
    d.gpu->vram().write(d.offset, d.bytes);
    return true;
  });
}

void copy_engine_executor::stream_goes_on(const cuda::sync_request& scope) {
  if (m_sys.order().rules.enabled(pcie::order_rule::cuda_stream_order)) land_deferred(&scope);
}

bool copy_engine_executor::complete_on_return(const cuda::copy_request& r) const {
  if (r.async || m_sys.order().rules.enabled(pcie::order_rule::cuda_sync_memops))
    return r.complete_on_return;
  // Without the rule, a synchronous copy completes on return only for what is not SYNC_MEMOPS
  // (copy_request::complete_on_return): into or out of page-locked memory, or into pageable
  // memory.
  using cuda::copy_kind;
  return r.kind == copy_kind::device_to_host ||
         (r.kind == copy_kind::host_to_device && r.host_pinned);
}

// The CUDA driver pinned the memory's pages when it was allocated or registered, and kept
// them: the engine reads or writes those frames where they are, on whichever socket.
void copy_engine_executor::pinned_copy(const cuda::copy_request& r) {
  const bool to_device = r.kind == cuda::copy_kind::host_to_device;
  engine_dma(to_device ? r.dst_gpu : r.src_gpu, !to_device, r.host_bus, r, to_device);
}

// The destination's reserved BAR1 space is cut into windows of 4 MiB (64 pages); a copy takes
// one, maps the destination pages of as much of itself as fits, lets the source GPU's engine
// write them, unmaps them and goes on with the rest. Copies into one GPU at once take windows
// of their own, and wait for one when all are taken.
void copy_engine_executor::peer_copy(const cuda::copy_request& r) {
  constexpr uint64_t window_pages = 64;
  gpu::gpu& dst = *m_gpus.at(r.dst_gpu);
  gpu::bar1_page_table& bar1 = dst.bar1();
  auto& windows = m_peer_windows[r.dst_gpu];
  if (windows.empty()) windows.assign(bar1.reserved() / gpu::bar1_page_bytes / window_pages, false);
  if (windows.empty())
    throw std::runtime_error(std::string("GPU ") + dst.basename() +
                             " keeps less than 4 MiB of BAR1 for itself (bar1_reserved): no "
                             "room to map a peer copy's destination");
  size_t w = 0;
  for (;;) {
    w = size_t(std::find(windows.begin(), windows.end(), false) - windows.begin());
    if (w < windows.size()) break;
    wait(m_peer_window_freed);
  }
  windows[w] = true;
  const uint64_t first_page = w * window_pages;
  // Pieces of the copy no larger than a destination page, in order.
  std::vector<cuda::copy_segment> pieces;
  for (const auto& s : r.segments)
    for (uint64_t done = 0; done < s.bytes;) {
      const uint64_t dst = s.dst + done;
      const uint64_t n =
          std::min(s.bytes - done, gpu::bar1_page_bytes - dst % gpu::bar1_page_bytes);
      pieces.push_back({s.src + done, dst, n});
      done += n;
    }
  const uint64_t bar1_bus = dst.params().bar1.base;
  uint64_t lost = 0;
  for (size_t next = 0; next < pieces.size();) {
    dma::dma_job job;
    job.write = true;                      // the source's VRAM -> the destination's BAR1 (MWr)
    std::map<uint64_t, uint64_t> page_of;  // destination frame -> BAR1 page in the window
    for (; next < pieces.size(); ++next) {
      const auto& p = pieces[next];
      const uint64_t frame = p.dst / gpu::bar1_page_bytes * gpu::bar1_page_bytes;
      auto it = page_of.find(frame);
      if (it == page_of.end()) {
        if (page_of.size() == window_pages) break;
        it = page_of.emplace(frame, first_page + page_of.size()).first;
        bar1.map_reserved(it->second, frame);
      }
      job.segments.push_back(
          {bar1_bus + it->second * gpu::bar1_page_bytes + p.dst - frame, p.bytes, p.src});
    }
    lost += run_job(r.src_gpu, std::move(job));
    for (const auto& [frame, page] : page_of) bar1.unmap_reserved(page);
  }
  note_undelivered(r, lost);
  windows[w] = false;
  m_peer_window_freed.notify(SC_ZERO_TIME);
}

void copy_engine_executor::copy(const cuda::copy_request& r) {
  if (r.bytes > staging_bytes && !r.host_pinned &&
      (r.kind != cuda::copy_kind::device_to_device || r.src_gpu != r.dst_gpu))
    throw std::runtime_error("a host copy larger than the 256 MiB staging buffer");
  const int gpu = engine_gpu(r);
  const gpu::gpu_params& engine = m_gpus.at(gpu)->params();
  const size_t index = m_times.size();
  const std::string gpu_name(m_gpus.at(gpu)->basename());
  m_times.push_back(
      {transport::now_ps(), 0, 0, gpu_name, m_sys.addresses().socket_of.at(gpu_name)});
  // The source bytes of a copy from pageable memory are staged now: the application may reuse
  // its buffer. A copy engine reads page-locked memory itself, when the copy runs.
  std::vector<uint8_t> staged;
  if (r.kind == cuda::copy_kind::host_to_device && !r.host_pinned) {
    staged.resize(r.bytes);
    m_memory.read(r.host_src, staged);
  }
  spend(engine.copy_submit_ns);  // the driver, in the caller's thread
  const stream_key key{r.pid, r.ctx, r.stream};
  queue& q = m_queues[key];
  q.gpu = gpu;
  const uint64_t ticket = q.issued++;
  // From the doorbell: the engine fetches the copy while the copies ahead of it on the stream
  // run, so it starts at the later of its launch and their completion.
  const bool complete = complete_on_return(r);
  auto body = [this, r, staged, ticket, key, index, gpu, &engine, complete] {
    spend(engine.copy_launch_ns);
    while (m_queues[key].finished != ticket) wait(m_progress);  // stream order
    stream_goes_on({r.pid, r.ctx, r.stream, false});            // the copies before it are complete
    engine_lane* lane = take_lane(gpu, r.kind, key, engine);
    run(r, staged, !complete);
    spend(engine.copy_completion_ns);
    m_times[index].complete_ps = transport::now_ps();
    ++m_queues[key].finished;
    if (lane) {
      lane->free_ps = transport::now_ps();
      lane->last_stream = key;
      ++lane->serving;
    }
    m_progress.notify(SC_ZERO_TIME);
  };
  if (complete) {
    body();
    spend(engine.copy_sync_return_ns);
  } else {
    sc_spawn(body);  // returns once queued; the copy runs on (guide 5.7)
  }
  m_times[index].return_ps = transport::now_ps();
}

// Which of a GPU's copy engines a copy takes (gpu_spec `copy_engines`): with one, every copy
// takes it; with two, host to device copies take one and the others the second; with three
// or more, copies within device memory (and to other GPUs) take a third.
int copy_engine_executor::lane_of(cuda::copy_kind kind, int engines) {
  if (engines <= 1) return 0;
  if (kind == cuda::copy_kind::host_to_device) return 0;
  if (kind == cuda::copy_kind::device_to_host || engines == 2) return 1;
  return 2;
}

// Waits, in the order copies came to it, until the engine a copy takes has finished the
// copies before it; after another stream's copy, `copy_switch` more. Null when the GPU's
// engines are not modelled (`copy_engines: 0`): copies then run at once.
copy_engine_executor::engine_lane* copy_engine_executor::take_lane(int gpu, cuda::copy_kind kind,
                                                                   const stream_key& stream,
                                                                   const gpu::gpu_params& engine) {
  if (engine.copy_engines <= 0) return nullptr;
  engine_lane& lane = m_lanes[{gpu, lane_of(kind, engine.copy_engines)}];
  const uint64_t turn = lane.tickets++;
  while (lane.serving != turn) wait(m_progress);
  if (lane.served_any && lane.last_stream != stream) {
    const uint64_t at = lane.free_ps + uint64_t(engine.copy_switch_ns * 1000 + 0.5);
    if (at > transport::now_ps()) wait(sc_time(double(at - transport::now_ps()), SC_PS));
  }
  lane.served_any = true;
  return &lane;
}

void copy_engine_executor::drain() {
  while (first_pending(nullptr)) wait(m_progress);
  land_deferred(nullptr);
}

void copy_engine_executor::synchronize(const cuda::sync_request& r) {
  // The caller pays the wake-up of the GPU it last waited on, once it waited at all.
  int waited_on = -1;
  for (const queue* q; (q = first_pending(&r));) {
    waited_on = q->gpu;
    wait(m_progress);
  }
  if (waited_on >= 0) spend(m_gpus.at(waited_on)->params().copy_sync_return_ns);
  stream_goes_on(r);  // synchronized: complete
}

}  // namespace p2psim::core
