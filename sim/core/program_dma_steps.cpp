// The program's `dma` steps: the third-party device's DMA into or out of a buffer through the
// registration cache (or an imported dma-buf region), every byte checked where it should land.
#include <fmt/format.h>

#include "models/driver/kernel/kernel.h"
#include "models/pcie/time_units.h"
#include "models/transport/sim_clock.h"
#include "models/transport/stream_log.h"
#include "sim/core/byte_pattern.h"
#include "sim/core/integrity.h"
#include "sim/core/program_runner.h"

namespace p2psim::core {

using namespace sc_core;

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
    d.add(log[id], len);
    if (s.write && log[id].undelivered_bytes())
      d.escaped += escaped_bytes(where, pat, inv, log[id].landed_bytes);
    if (!s.write &&
        m_images.count(image_key(s.buffer))) {  // compare with what the program put there
      std::vector<uint8_t> got(len);
      m_engine->local_memory().read(local, got);
      const auto& image = m_images.at(image_key(s.buffer));
      for (uint64_t i = 0; i < len; ++i) d.stale += got[i] != image[s.offset + i];
    }
    const bool live = m_buffers.at(s.buffer).live;
    if (log[id].undelivered_bytes() == 0 && (live || !s.region.empty()))
      d.mismatched += verify(where, len, local);
    if (log[id].undelivered_bytes() == 0 && live) {
      if (s.write) {  // what the buffer now holds, for later cuMemcpyDtoH checks
        auto& image = m_images[image_key(s.buffer)];
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

void program_runner::dma_result::add(const transport::stream_record& r, uint64_t n) {
  bytes += n;
  landed += r.landed_bytes;
  failed += r.failed_bytes;
  lost += r.lost_bytes;
  timed_out += r.timed_out_bytes;
  if (!first_ps) first_ps = r.first_start_ps;
  last_ps = r.last_land_ps;
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
  if (d.into_freed)
    m_errors.push_back(fmt::format(
        "{}: {} bytes written into memory the program had freed: the memory region outlived "
        "its buffer",
        d.name, d.into_freed));
  if (d.mismatched)
    m_errors.push_back(
        fmt::format("{}: {} bytes differ between GPU memory and the device", d.name, d.mismatched));
}

}  // namespace p2psim::core
