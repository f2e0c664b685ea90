// The steps of a program: CUDA calls and the third-party driver's DMA, with data checks.
#include <fmt/format.h>

#include "models/driver/cuda/cuda.h"
#include "models/driver/kernel/kernel.h"
#include "models/pcie/time_units.h"
#include "models/transport/sim_clock.h"
#include "models/transport/stream_log.h"
#include "sim/core/byte_pattern.h"
#include "sim/core/integrity.h"
#include "sim/core/program_runner.h"

namespace p2psim::core {

using namespace sc_core;
using nlohmann::json;

std::string step_result(CUresult r) {
  if (r == CUDA_SUCCESS) return "ok";
  const char* n = nullptr;
  cuGetErrorName(r, &n);
  return n ? n : std::to_string(int(r));
}

std::string errno_name(int r) {
  switch (-r) {
    case 0:
      return "ok";
    case EINVAL:
      return "-EINVAL";
    case ENOMEM:
      return "-ENOMEM";
    case EPERM:
      return "-EPERM";
    case EIO:
      return "-EIO";
    case ENOTSUPP:
      return "-ENOTSUPP";
    case EFAULT:
      return "-EFAULT";
    case EBADF:
      return "-EBADF";
  }
  return std::to_string(r);
}

std::string program_runner::cuda_step(const step_spec& s, int pid) {
  if (s.call == "cuInit") return step_result(cuInit(0));
  if (s.call == "cuCtxCreate") {
    int ordinal = -1;
    for (int g = 0; g < m_driver.gpu_count(); ++g)
      if (m_driver.gpu(g).name == s.device) ordinal = g;
    CUdevice dev = 0;
    CUresult r = cuDeviceGet(&dev, ordinal);
    if (r != CUDA_SUCCESS) return step_result(r);
    CUcontext ctx = nullptr;
    r = cuCtxCreate(&ctx, 0, dev);
    if (r == CUDA_SUCCESS) m_contexts[pid] = ctx;
    if (r == CUDA_SUCCESS && !s.name.empty()) m_named_contexts[s.name] = ctx;
    return step_result(r);
  }
  // A named context whose cuCtxCreate failed is NULL here, as the program would have it.
  auto named = [&] {
    auto it = m_named_contexts.find(s.context);
    return it == m_named_contexts.end() ? CUcontext(nullptr) : it->second;
  };
  if (s.call == "cuCtxSetCurrent") {
    CUresult r = cuCtxSetCurrent(named());
    if (r == CUDA_SUCCESS) m_contexts[pid] = named();
    return step_result(r);
  }
  if (s.call == "cuCtxEnablePeerAccess") return step_result(cuCtxEnablePeerAccess(named(), 0));
  if (s.call == "cuCtxDisablePeerAccess") return step_result(cuCtxDisablePeerAccess(named()));
  if (s.call == "cuCtxDestroy") return step_result(cuCtxDestroy(m_contexts[pid]));
  if (s.call == "cuCtxSynchronize") return step_result(cuCtxSynchronize());
  if (s.call == "cuStreamCreate") {
    CUstream st = nullptr;
    CUresult r = cuStreamCreate(&st, 0);
    if (r == CUDA_SUCCESS) m_streams[s.name] = st;
    return step_result(r);
  }
  if (s.call == "cuStreamSynchronize") return step_result(cuStreamSynchronize(stream_of(s)));
  if (s.call == "cuMemAlloc") {
    CUdeviceptr p = 0;
    CUresult r = cuMemAlloc(&p, s.size);
    if (r == CUDA_SUCCESS) m_buffers[s.name] = {p, s.size, pid};
    return step_result(r);
  }
  auto it = m_buffers.find(s.buffer);
  const buffer b = it == m_buffers.end() ? buffer{0, 0, pid, false} : it->second;  // failed alloc
  // cuMemFree: the free callback runs inside it, and may wait for in-flight DMA (6.4).
  CUresult r = cuMemFree(b.va);
  if (r == CUDA_SUCCESS) it->second.live = false;
  return step_result(r);
}

// The stream a step names: nullptr (the NULL stream) when it names none, or when its
// cuStreamCreate failed (a step that expected that failure may go on).
CUstream program_runner::stream_of(const step_spec& s) const {
  auto it = m_streams.find(s.stream);
  return it == m_streams.end() ? nullptr : it->second;
}

// Copies through the CUDA API (and so through the GPU's copy engine on the fabric). The
// program remembers what it copied into each buffer and checks what comes back out: at once
// for a copy complete on return, after the program for one into pinned memory still running.
// What the program last put in `len` bytes of host buffer `name` from `offset` (zeros where it
// put nothing: the kernel's fresh pages).
std::vector<uint8_t> program_runner::held_bytes(const std::string& name, uint64_t offset,
                                                uint64_t len) const {
  std::vector<uint8_t> bytes(len, 0);
  auto it = m_images.find(name);
  if (it != m_images.end())
    for (uint64_t i = 0; i < len && offset + i < it->second.size(); ++i)
      bytes[i] = it->second[offset + i];
  return bytes;
}

std::string program_runner::memcpy_step(const step_spec& s) {
  auto it = m_buffers.find(s.buffer);
  const buffer b = it == m_buffers.end() ? buffer{0, 0, 0, false} : it->second;
  const uint64_t len = s.size ? s.size : b.size - std::min(s.offset, b.size);
  auto& image = m_images[s.buffer];
  image.resize(std::max<uint64_t>(image.size(), b.size));
  const size_t copies_before = m_copies->times().size();
  // The copy a `since` or `after` names was noted before this one (when it succeeded).
  const std::string& from_name = s.since.empty() ? s.after : s.since;
  auto timed_from = [&](size_t own) {
    for (const auto& c : m_named_copies)
      if (c.name == from_name) return c.index;
    return own;
  };
  auto note_copy = [&](CUresult r) {
    if (r == CUDA_SUCCESS && !s.name.empty() && m_copies->times().size() > copies_before)
      m_named_copies.push_back({s.name, s.call, len, s.async, copies_before,
                                timed_from(copies_before), !s.after.empty()});
    return step_result(r);
  };
  // The host side: the program's own (pageable) memory, or a block of cuMemAllocHost's that
  // lives to the end of the run (an asynchronous copy may still be reading or writing it), on
  // the socket of the buffer's GPU, as a process bound near its GPU allocates.
  std::vector<uint8_t> pageable;
  uint8_t* host = nullptr;
  auto named_host = m_buffers.find(s.host_buffer);
  if (!s.host_buffer.empty()) {  // a host buffer of the program's: what it holds now
    if (named_host == m_buffers.end()) return step_result(CUDA_ERROR_INVALID_VALUE);
    host = reinterpret_cast<uint8_t*>(uintptr_t(named_host->second.va + s.host_offset));
  } else if (s.call != "cuMemcpyDtoD") {
    if (s.pinned) {
      void* p = nullptr;
      const int pid = kernel::current_pid();
      const int node = m_os.numa_node(pid);
      if (auto at = m_driver.vram_of(b.pid, b.va + s.offset))
        m_os.set_numa_node(
            pid, m_frames.node_of(m_sys.addresses().socket_of.at(m_driver.gpu(at->first).name)));
      CUresult r = cuMemAllocHost(&p, len);
      m_os.set_numa_node(pid, node);
      if (r != CUDA_SUCCESS) return step_result(r);
      host = static_cast<uint8_t*>(p);
    } else {
      pageable.resize(len);
      host = pageable.data();
    }
  }
  if (s.call == "cuMemcpyHtoD") {
    std::vector<uint8_t> bytes = pattern_bytes(m_seed + m_steps.size(), len);
    if (s.host_buffer.empty())
      m_os.memory().write(host, bytes);
    else if (named_host->second.live)
      m_os.memory().read(host, bytes);  // what a DMA or an earlier copy put there
    else  // freed, but still registered: its pinned pages hold what the program last put there
      bytes = held_bytes(s.host_buffer, s.host_offset, len);
    CUresult r = s.async ? cuMemcpyHtoDAsync(b.va + s.offset, host, len, stream_of(s))
                         : cuMemcpyHtoD(b.va + s.offset, host, len);
    if (r == CUDA_SUCCESS) std::copy(bytes.begin(), bytes.end(), image.begin() + s.offset);
    return note_copy(r);
  }
  if (s.call == "cuMemcpyDtoH") {
    CUresult r = s.async ? cuMemcpyDtoHAsync(host, b.va + s.offset, len, stream_of(s))
                         : cuMemcpyDtoH(host, b.va + s.offset, len);
    if (r != CUDA_SUCCESS) return note_copy(r);
    host_check check{s.loc.str(), s.buffer, host, {}};
    check.expected.assign(image.begin() + s.offset, image.begin() + s.offset + len);
    if (!s.host_buffer.empty()) {  // what the host buffer holds from now on
      auto& held = m_images[s.host_buffer];
      held.resize(std::max<uint64_t>(held.size(), named_host->second.size));
      std::copy(check.expected.begin(), check.expected.end(), held.begin() + s.host_offset);
    }
    if (!s.host_buffer.empty() && !named_host->second.live)
      return note_copy(r);  // freed: the program can no longer read what landed there
    if ((s.pinned || !s.host_buffer.empty()) && s.async)
      m_pending_checks.push_back(std::move(check));  // checked once the copies are done
    else
      check_host_bytes(check);
    return note_copy(r);
  }
  auto dst = m_buffers.find(s.to);
  const buffer d = dst == m_buffers.end() ? buffer{0, 0, 0, false} : dst->second;
  CUresult r = s.async ? cuMemcpyDtoDAsync(d.va + s.offset, b.va + s.offset, len, stream_of(s))
                       : cuMemcpyDtoD(d.va + s.offset, b.va + s.offset, len);
  if (r == CUDA_SUCCESS) {
    auto& to = m_images[s.to];
    to.resize(std::max<uint64_t>(to.size(), d.size));
    std::copy(image.begin() + s.offset, image.begin() + s.offset + len, to.begin() + s.offset);
  }
  return note_copy(r);
}

void program_runner::check_host_bytes(const host_check& c) {
  std::vector<uint8_t> got(c.expected.size());
  m_os.memory().read(c.host, got);
  uint64_t bad = 0;
  for (size_t i = 0; i < c.expected.size(); ++i) bad += got[i] != c.expected[i];
  if (bad)
    m_errors.push_back(
        fmt::format("{}: cuMemcpyDtoH of {} read {} bytes that differ from what "
                    "the program copied in",
                    c.where, c.buffer, bad));
}

std::vector<bandwidth_result> program_runner::copy_results() const {
  std::vector<bandwidth_result> out;
  for (const auto& c : m_named_copies) {
    const auto& t = m_copies->times().at(c.index);
    // What the caller waited, for a synchronous call; for an asynchronous one, the time to
    // its completion: what CUDA events around it measure.
    const uint64_t end = c.async ? t.complete_ps : t.return_ps;
    const auto& start = m_copies->times().at(c.from);
    const uint64_t from = c.from_completion ? start.complete_ps : start.call_ps;
    bandwidth_result b;
    b.transfer = c.name;
    b.src = t.engine;
    b.dst = c.call == "cuMemcpyDtoD" ? t.engine : t.host;
    b.op = c.call == "cuMemcpyHtoD" ? "read" : "write";  // seen from the copy engine
    b.bytes = c.bytes;
    b.seconds = end > from ? (end - from) * 1e-12 : 0;
    b.gbps = b.seconds > 0 ? c.bytes / b.seconds * 1e-9 : 0;
    b.call = c.call;
    b.async = c.async;
    out.push_back(b);
  }
  return out;
}

std::vector<program_runner::vram_piece> program_runner::vram_pieces(const buffer& b,
                                                                    uint64_t offset,
                                                                    uint64_t length) {
  std::vector<vram_piece> out;
  if (b.host) {  // the frames the kernel keeps the pages in
    const void* p = reinterpret_cast<const void*>(uintptr_t(b.va + offset));
    std::vector<kernel::bus_run> runs;
    if (m_os.memory().pin(b.pid, p, length, runs) != 0) return out;
    for (const auto& r : runs) {
      auto [store, at] = m_frames.locate(r.bus);
      out.push_back({store, at, r.bytes});
    }
    m_os.memory().unpin(p, length);
    return out;
  }
  for (uint64_t i = 0; i < length;) {
    auto where = m_driver.vram_of(b.pid, b.va + offset + i);
    uint64_t n =
        std::min(length - i, nv::gpu_page_bytes - (b.va + offset + i) % nv::gpu_page_bytes);
    if (where) out.push_back({m_driver.gpu(where->first).vram, where->second, n});
    i += n;
  }
  return out;
}

void program_runner::write_gpu(const std::vector<vram_piece>& where,
                               const std::vector<uint8_t>& bytes) {
  uint64_t at = 0;
  for (const auto& p : where) {
    p.store->write(p.vram, std::span(bytes.data() + at, p.length));
    at += p.length;
  }
}

// The integrity rule (integrity.h) for a write that did not all land, on the pieces the
// buffer had when the DMA started: it holds after a free too.
uint64_t program_runner::escaped_bytes(const std::vector<vram_piece>& where,
                                       const std::vector<uint8_t>& now,
                                       const std::vector<uint8_t>& before, uint64_t landed) {
  std::vector<uint8_t> memory;
  for (const auto& p : where) {
    std::vector<uint8_t> got(p.length);
    p.store->read(p.vram, got);
    memory.insert(memory.end(), got.begin(), got.end());
  }
  return core::escaped_bytes(memory, std::span(now).first(memory.size()),
                             std::span(before).first(memory.size()), landed);
}

// Bytes of the buffer that differ from the engine's local memory, piece by piece where they
// were when the DMA started (GPU pages are scattered in VRAM).
uint64_t program_runner::verify(const std::vector<vram_piece>& where, uint64_t length,
                                uint64_t local) {
  uint64_t bad = 0, at = 0;
  for (const auto& p : where) {
    std::vector<uint8_t> mem(p.length), dev(p.length);
    p.store->read(p.vram, mem);
    m_engine->local_memory().read(local + at, dev);
    for (uint64_t k = 0; k < p.length; ++k) bad += mem[k] != dev[k];
    at += p.length;
  }
  return bad + (length - at);  // bytes with no memory behind them
}

std::string program_runner::dma(const step_spec& s, int pid, size_t index) {
  const buffer b = m_buffers.at(s.buffer);
  const uint64_t len = s.size ? s.size : b.size - s.offset;
  const uint64_t va = b.va + s.offset, local = s.offset;
  transport::stream_log& log = m_sys.streams();
  std::string result = "ok";
  peer::regcache& cache = cache_of(pid);
  const uint64_t start_ps = transport::now_ps();
  for (int rep = 0; rep < s.count && result == "ok"; ++rep) {
    // `every`: repetitions start at a fixed rate, as messages arrive; a late one starts at once.
    const uint64_t due_ps = start_ps + pcie::ns_to_ps(rep * s.every_ns);
    if (due_ps > transport::now_ps()) wait(transport::ps(due_ps - transport::now_ps()));
    const uint64_t seed = m_seed * 7919 + index * 131 + rep;
    // Source gets the pattern, the destination its complement.
    const std::vector<uint8_t> pat = pattern_bytes(seed, len);
    std::vector<uint8_t> inv(len);
    for (uint64_t i = 0; i < len; ++i) inv[i] = uint8_t(~pat[i]);
    // A write sends a fresh pattern over the complement; a read leaves the GPU buffer as the
    // program made it and reads into the complement of the pattern.
    // Through an imported region: where the driver's mapping takes the bytes, which is the
    // exported memory even after the program freed it.
    auto imported = s.region.empty() ? m_imported.end() : m_imported.find(s.region);
    const auto where = imported != m_imported.end()
                           ? region_pieces(*imported->second.region, va, len)
                           : vram_pieces(b, s.offset, len);
    if (s.write) {
      m_engine->local_memory().write(local, pat);
      write_gpu(where, inv);
    } else {
      m_engine->local_memory().write(local, inv);
    }
    // This thread runs beside the program's: `current` is set only around calls that do not
    // wait, so neither thread finds the other's process when it resumes.
    peer::kmd_region* r = nullptr;
    int ret = 0;
    if (!s.region.empty()) {  // through an imported dma-buf the program names
      if (imported == m_imported.end())
        ret = -EINVAL;  // its import failed, or released since
      else
        r = imported->second.region;
    } else {
      {
        kernel::as_process as(pid);
        ret = cache.acquire(va, len, &r);
      }
      wait_driver_time();  // a miss pins: that takes time (guide 5.1)
    }
    if (ret) {
      result = errno_name(ret);
      break;
    }
    std::vector<peer::bus_segment> segs;
    ret = m_kmd->dma_segments(*r, va, len, local, segs);
    if (ret) {  // e.g. a stale cache entry whose pages are gone
      result = errno_name(ret);
      kernel::as_process as(pid);
      if (s.region.empty()) cache.release(r);
      break;
    }
    dma::dma_job job;
    job.write = s.write;
    job.attrs.relaxed_ordering = s.relaxed_ordering;
    job.attrs.id_based_ordering = s.id_based_ordering;
    for (const auto& g : segs) job.segments.push_back({g.bus_address, g.length, g.local_offset});
    job.stream = log.open(len);
    log[job.stream].submit_ps = transport::now_ps();
    m_kmd->dma_begin(*r);
    m_engine->submit(std::move(job));
    const uint32_t id = job.stream;
    transport::wait_until_landed(log, id);
    m_kmd->dma_end(*r);
    m_dma_done.notify(SC_ZERO_TIME);
    if (s.region.empty()) {
      {
        kernel::as_process as(pid);
        cache.release(r);
      }
      wait_driver_time();  // without the cache, release unpins
    }
    dma_result& d = m_dmas[index];
    d.bytes += len;
    d.landed += log[id].landed_bytes;
    d.failed += log[id].failed_bytes;
    d.lost += log[id].lost_bytes;
    d.timed_out += log[id].timed_out_bytes;
    if (s.write && log[id].undelivered_bytes())
      d.escaped += escaped_bytes(where, pat, inv, log[id].landed_bytes);
    if (!d.first_ps) d.first_ps = log[id].first_start_ps;
    d.last_ps = log[id].last_land_ps;
    if (!s.write && m_images.count(s.buffer)) {  // compare with what the program put there
      std::vector<uint8_t> got(len);
      m_engine->local_memory().read(local, got);
      const auto& image = m_images.at(s.buffer);
      for (uint64_t i = 0; i < len; ++i) d.stale += got[i] != image[s.offset + i];
    }
    const bool live = m_buffers.at(s.buffer).live;
    if (log[id].undelivered_bytes() == 0 && (live || !s.region.empty()))
      d.mismatched += verify(where, len, local);
    if (log[id].undelivered_bytes() == 0 && live) {
      if (s.write) {  // what the buffer now holds, for later cuMemcpyDtoH checks
        auto& image = m_images[s.buffer];
        image.resize(std::max<uint64_t>(image.size(), b.size));
        std::copy(pat.begin(), pat.end(), image.begin() + s.offset);
      }
    }
  }
  dma_result& d = m_dmas[index];
  d.done = true;
  m_dma_done.notify(SC_ZERO_TIME);
  note_dma_errors(d);
  return result;
}

void program_runner::note_dma_errors(const dma_result& d) {
  if (d.failed)
    m_errors.push_back(
        fmt::format("{}: {} of {} bytes refused by the fabric", d.name, d.failed, d.bytes));
  if (d.lost)
    m_errors.push_back(
        fmt::format("{}: {} of {} bytes lost on a link that went down", d.name, d.lost, d.bytes));
  if (d.timed_out)
    m_errors.push_back(fmt::format("{}: {} of {} bytes never came back (completion timeout)",
                                   d.name, d.timed_out, d.bytes));
  if (d.escaped)
    m_errors.push_back(
        fmt::format("{}: data integrity: {} bytes reached memory they were not allowed to reach",
                    d.name, d.escaped));
  if (d.mismatched)
    m_errors.push_back(
        fmt::format("{}: {} bytes differ between GPU memory and the device", d.name, d.mismatched));
}

json program_runner::results() const {
  json j;
  j["steps"] = m_steps;
  const auto& c = m_driver.counters();
  j["driver"] = {{"pins", c.pins},
                 {"unpins", c.unpins},
                 {"persistent_pins", c.persistent_pins},
                 {"callbacks", c.callbacks},
                 {"refused_calls", c.refused},
                 {"get_pages_enomem", c.bar1_exhausted},
                 {"dma_buf_exports", c.dma_buf_exports},
                 {"dma_buf_maps", c.dma_buf_maps},
                 {"dma_buf_unmaps", c.dma_buf_unmaps},
                 {"pinning_ns", c.pin_ns}};
  j["driver"]["events"] = json::array();
  for (const auto& e : m_driver.events())
    j["driver"]["events"].push_back({{"what", e.what}, {"detail", e.detail}});
  if (m_kmd) {
    peer::regcache_stats r;  // every process's cache together
    for (const auto& [pid, cache] : m_caches) {
      const auto& c = cache->stats();
      r.hits += c.hits, r.misses += c.misses, r.evictions += c.evictions;
      r.enomem_retries += c.enomem_retries, r.tag_invalidations += c.tag_invalidations;
      r.host_pins += c.host_pins;
    }
    j["regcache"] = {{"hits", r.hits},
                     {"misses", r.misses},
                     {"evictions", r.evictions},
                     {"enomem_retries", r.enomem_retries},
                     {"tag_invalidations", r.tag_invalidations},
                     {"host_pins", r.host_pins},
                     {"peak_pinned_bytes", m_peak_cached_bytes},
                     {"processes", m_caches.size()}};
    const auto& k = m_kmd->stats();
    j["peer_driver"] = {{"pins", k.pins},
                        {"unpins", k.unpins},
                        {"pin_failures", k.pin_failures},
                        {"callbacks", k.callbacks},
                        {"callbacks_that_waited", k.waited_callbacks}};
  }
  j["cuda_copies"] = {{"copies", m_copies->copies()}, {"bytes", m_copies->bytes()}};
  j["bar1"] = json::array();
  for (int g = 0; g < m_driver.gpu_count(); ++g) {
    const auto& res = m_driver.gpu(g);
    uint64_t total = res.bar1->size(), used = m_driver.bar1_used_bytes(g);
    const bar1_peak none{used, 0, 0, used - res.bar1->reserved()};
    const bar1_peak& peak = m_bar1_peak.count(res.name) ? m_bar1_peak.at(res.name) : none;
    j["bar1"].push_back({{"gpu", res.name},
                         {"total_bytes", total},
                         {"reserved_bytes", res.bar1->reserved()},
                         {"used_bytes", used},
                         {"free_bytes", total - used},
                         {"peak_used_bytes", peak.used},
                         {"peak_requested_bytes", peak.requested},
                         {"peak_pinned_bytes", peak.pinned},
                         {"peak_mapped_bytes", peak.mapped},
                         {"get_pages_enomem", m_driver.bar1_exhausted(g)}});
  }
  j["dma"] = json::array();
  for (const auto& d : m_dmas) {
    double ps = double(d.last_ps > d.first_ps ? d.last_ps - d.first_ps : 0);
    j["dma"].push_back({{"name", d.name},
                        {"op", d.write ? "write" : "read"},
                        {"bytes", d.bytes},
                        {"landed_bytes", d.landed},
                        {"failed_bytes", d.failed},
                        {"lost_bytes", d.lost},
                        {"timed_out_bytes", d.timed_out},
                        {"escaped_bytes", d.escaped},
                        {"stale_bytes", d.stale},
                        {"mismatched_bytes", d.mismatched},
                        {"first_ns", d.first_ps / 1000.0},
                        {"last_ns", d.last_ps / 1000.0},
                        {"gbps", ps > 0 ? d.landed / ps * 1000.0 : 0.0}});
  }
  return j;
}

}  // namespace p2psim::core
