// The steps of a program: CUDA calls and copies, with data checks, and the results; the
// third-party driver's DMA is in program_dma_steps.cpp.
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
    case EACCES:
      return "-EACCES";
    case EBUSY:
      return "-EBUSY";
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
  auto it = m_images.find(image_key(name));
  if (it != m_images.end())
    for (uint64_t i = 0; i < len && offset + i < it->second.size(); ++i)
      bytes[i] = it->second[offset + i];
  return bytes;
}

std::string program_runner::memcpy_step(const step_spec& s) {
  auto it = m_buffers.find(s.buffer);
  const buffer b = it == m_buffers.end() ? buffer{0, 0, 0, false} : it->second;
  const uint64_t len = s.size ? s.size : b.size - std::min(s.offset, b.size);
  auto& image = m_images[image_key(s.buffer)];
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
      auto& held = m_images[image_key(s.host_buffer)];
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
    auto& to = m_images[image_key(s.to)];
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
  if (!m_mrs.empty()) {
    const auto& r = m_rdma->stats();
    j["rdma"] = {{"registrations", r.registrations},
                 {"refused_registrations", r.refused},
                 {"deregistrations", r.deregistrations},
                 {"invalidations", r.invalidations},
                 {"invalidations_that_waited", r.waited_invalidations},
                 {"refused_accesses", r.accesses_refused},
                 {"nv_mem_invalidations", m_nv_mem->invalidations()}};
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
    json row = {{"name", d.name},
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
                {"gbps", ps > 0 ? d.landed / ps * 1000.0 : 0.0}};
    if (d.through_mr) {
      row["access_errors"] = d.access_errors;
      row["into_freed_bytes"] = d.into_freed;
    }
    j["dma"].push_back(std::move(row));
  }
  return j;
}

}  // namespace p2psim::core
