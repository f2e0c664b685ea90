// The program's RDMA registration steps (guide 6.7; docs/formats-scenario.md, "RDMA
// registration"): ibv_reg_mr and ibv_dereg_mr through nvidia-peermem, and a remote peer's
// RDMA write or read that the peer driver's device carries out through a memory region,
// every byte checked where the region's pages put it.
#include <fmt/format.h>

#include "models/pcie/time_units.h"
#include "models/transport/sim_clock.h"
#include "models/transport/stream_log.h"
#include "sim/core/byte_pattern.h"
#include "sim/core/program_runner.h"

namespace p2psim::core {

using namespace sc_core;

std::string program_runner::rdma_step(const step_spec& s, int pid) {
  if (s.call == "ibv_reg_mr") {
    auto it = m_buffers.find(s.buffer);
    const bool known = it != m_buffers.end();  // else its allocation failed: NULL
    const uint64_t va = (known ? it->second.va : 0) + s.offset;
    const uint64_t size =
        s.has_size ? s.size : (known ? it->second.size - std::min(s.offset, it->second.size) : 0);
    peer::rdma_mr* mr = nullptr;
    const int ret = m_rdma->reg_mr(&m_peer_dev, va, size, &mr, s.invalidation);
    m_mrs[s.name] = {ret == 0 ? mr : nullptr, ret == 0 ? mr->rkey : 0, va, size, s.offset, pid};
    wait_driver_time();  // it pins twice (acquire's probe, then get_pages)
    return errno_name(ret);
  }
  auto it = m_mrs.find(s.mr);  // ibv_dereg_mr
  // A region is its process's (its verbs context's): another process cannot name it.
  if (!it->second.mr || it->second.pid != pid) return "-EINVAL";
  const int ret = m_rdma->dereg_mr(it->second.mr);
  if (ret == 0) it->second.mr = nullptr;
  wait_driver_time();
  return errno_name(ret);
}

// A process's exit closes its verbs context: what it registered is deregistered, after the
// NVIDIA driver took its memory back (its callbacks invalidated those regions already).
void program_runner::close_verbs(int pid) {
  if (!m_rdma) return;
  for (auto& [name, region] : m_mrs) {
    if (!region.mr || region.pid != pid) continue;
    while (region.mr->in_flight) wait(m_dma_done);  // the device finishes what it started
    m_rdma->dereg_mr(region.mr);
    region.mr = nullptr;
  }
}

// A remote peer's RDMA write (or read) of [offset, offset + size) of a region: the device
// checks the access against the region (a remote access error once it is invalidated or
// deregistered, or outside it) and moves the bytes to or from the region's bus addresses. A
// write lands where the region's pages are: in the buffer while it is live, and in memory the
// program freed when the registration outlived it (counted; an error of the run).
std::string program_runner::mr_dma(const step_spec& s, size_t index) {
  const memory_region& region = m_mrs.at(s.mr);
  const uint64_t len = s.has_size ? s.size : region.size - std::min(s.offset, region.size);
  const uint64_t address = region.address + s.offset, local = 0;
  const uint64_t buffer_offset = region.offset + s.offset;
  transport::stream_log& log = m_sys.streams();
  std::string result = "ok";
  if (len > m_engine->local_memory().capacity()) {
    const std::string why = fmt::format("{} bytes do not fit the device's local memory", len);
    if (s.wait)
      m_check = why;
    else
      m_errors.push_back(m_dmas[index].name + ": " + why);
    result = "-EINVAL";
  }
  const uint64_t start_ps = transport::now_ps();
  for (int rep = 0; rep < s.count && result == "ok"; ++rep) {
    const uint64_t due_ps = start_ps + pcie::ns_to_ps(rep * s.every_ns);
    if (due_ps > transport::now_ps()) wait(transport::ps(due_ps - transport::now_ps()));
    // The device looks the remote peer's rkey up: gone with the region's deregistration.
    std::vector<kernel::bus_run> runs;
    const int ret = m_rdma->translate(region.rkey, address, len, runs);
    if (ret) {
      ++m_dmas[index].access_errors;
      result = errno_name(ret);
      break;
    }
    const uint64_t seed = m_seed * 7919 + index * 131 + rep;
    const std::vector<uint8_t> pat = pattern_bytes(seed, len);
    std::vector<uint8_t> inv(len);
    for (uint64_t i = 0; i < len; ++i) inv[i] = uint8_t(~pat[i]);
    const auto where = bus_pieces(runs);
    if (s.write) {
      m_engine->local_memory().write(local, pat);
      write_gpu(where, inv);
    } else {
      m_engine->local_memory().write(local, inv);
    }
    dma::dma_job job;
    job.write = s.write;
    job.attrs.relaxed_ordering = s.relaxed_ordering;
    job.attrs.id_based_ordering = s.id_based_ordering;
    uint64_t at = local;
    for (const auto& r : runs) {
      job.segments.push_back({r.bus, r.bytes, at});
      at += r.bytes;
    }
    job.stream = log.open(len);
    log[job.stream].submit_ps = transport::now_ps();
    const uint32_t id = job.stream;
    peer::rdma_mr& mr = *m_rdma->find(region.rkey);
    m_rdma->access_begin(mr);  // an invalidation waits for it to end
    m_engine->submit(std::move(job));
    transport::wait_until_landed(log, id);
    m_rdma->access_end(mr);
    m_dma_done.notify(SC_ZERO_TIME);
    dma_result& d = m_dmas[index];
    d.add(log[id], len);
    if (s.write && log[id].undelivered_bytes())
      d.escaped += escaped_bytes(where, pat, inv, log[id].landed_bytes);
    if (log[id].undelivered_bytes() == 0) d.mismatched += verify(where, len, local);
    const bool live = m_buffers.at(s.buffer).live;
    if (s.write && !live) d.into_freed += log[id].landed_bytes;
    if (!s.write && live && m_images.count(image_key(s.buffer))) {  // what the program put there
      std::vector<uint8_t> got(len);
      m_engine->local_memory().read(local, got);
      const auto& image = m_images.at(image_key(s.buffer));
      for (uint64_t i = 0; i < len && buffer_offset + i < image.size(); ++i)
        d.stale += got[i] != image[buffer_offset + i];
    }
    if (s.write && live && log[id].undelivered_bytes() == 0) {  // for later cuMemcpyDtoH checks
      auto& image = m_images[image_key(s.buffer)];
      image.resize(std::max<uint64_t>(image.size(), m_buffers.at(s.buffer).size));
      std::copy(pat.begin(), pat.end(), image.begin() + buffer_offset);
    }
  }
  dma_result& d = m_dmas[index];
  d.done = true;
  m_dma_done.notify(SC_ZERO_TIME);
  note_dma_errors(d);
  if (!s.wait && result != "ok")  // nobody waits for the step's result: an error of the run
    m_errors.push_back(fmt::format("{}: remote access error ({}) after {} of {} repetitions",
                                   d.name, result, d.bytes / std::max<uint64_t>(len, 1), s.count));
  return result;
}

}  // namespace p2psim::core
