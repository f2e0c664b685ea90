// The program's dma-buf steps (GPUDirect RDMA 13.3, 4.1): descriptors the program exports and
// closes, regions the device's kernel driver imports from them and releases
// (docs/formats-scenario.md, "dma-buf").
#include "models/driver/kernel/syscalls.h"
#include "models/iommu/iommu.h"
#include "sim/core/program_runner.h"

namespace p2psim::core {

std::string program_runner::dma_buf_step(const step_spec& s, int pid) {
  if (s.call == "cuMemGetHandleForAddressRange") {
    auto it = m_buffers.find(s.buffer);
    const bool known = it != m_buffers.end();  // else its allocation failed: NULL
    const uint64_t va = (known ? it->second.va : 0) + s.offset;
    const uint64_t size =
        s.has_size ? s.size : (known ? it->second.size - std::min(s.offset, it->second.size) : 0);
    int fd = -1;
    const CUresult r =
        cuMemGetHandleForAddressRange(&fd, va, size, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, s.flags);
    m_descriptors[s.name] = {r == CUDA_SUCCESS ? fd : -1, va};
    return step_result(r);
  }
  // A descriptor is the process's own: another process's number means nothing to it.
  const auto d = m_descriptors.find(s.fd);
  const int fd = d == m_descriptors.end() ? -1 : d->second.fd;
  if (s.call == "close") return kernel::sys::close(fd) == 0 ? "ok" : "-EBADF";
  if (s.call == "dma_buf_import") {
    peer::kmd_region* r = nullptr;
    const int ret = m_kmd->import_dma_buf(fd, d == m_descriptors.end() ? 0 : d->second.address, &r);
    if (ret == 0) m_imported[s.name] = {r, pid};
    wait_driver_time();  // the map takes BAR1 pages, as a pin does
    return errno_name(ret);
  }
  auto it = m_imported.find(s.region);           // dma_buf_release
  if (it == m_imported.end()) return "-EINVAL";  // its import failed, or released already
  const int ret = m_kmd->unpin(it->second.region);
  if (ret == 0) m_imported.erase(it);
  wait_driver_time();
  return errno_name(ret);
}

// The memory behind [va, va + length) of an imported region, as its DMA reaches it.
std::vector<program_runner::vram_piece> program_runner::region_pieces(const peer::kmd_region& r,
                                                                      uint64_t va,
                                                                      uint64_t length) {
  std::vector<peer::bus_segment> segments;
  if (m_kmd->dma_segments(r, va, length, 0, segments)) return {};
  std::vector<kernel::bus_run> runs;
  for (const auto& seg : segments) runs.push_back({seg.bus_address, seg.length});
  return bus_pieces(runs);
}

std::vector<program_runner::vram_piece> program_runner::bus_pieces(
    const std::vector<kernel::bus_run>& runs) {
  std::vector<vram_piece> out;
  const bool translated =
      m_peer_dev.iommu && m_peer_dev.iommu->mode() == iommu::iommu_mode::translating;
  for (const auto& run : runs)
    for (uint64_t at = 0; at < run.bytes;) {
      uint64_t bus = run.bus + at;
      // Up to the end of the 64 KiB page: BAR1 and the IOVAs map pages one by one.
      const uint64_t n = std::min(run.bytes - at, nv::gpu_page_bytes - bus % nv::gpu_page_bytes);
      if (translated) bus = m_peer_dev.iommu->translate(bus, false).address;
      for (int g = 0; g < m_driver.gpu_count(); ++g) {
        const auto& res = m_driver.gpu(g);
        if (bus < res.bar1_bus_base || bus - res.bar1_bus_base >= res.bar1->size()) continue;
        if (auto vram = res.bar1->translate(bus - res.bar1_bus_base))
          out.push_back({res.vram, *vram, n});
      }
      at += n;
    }
  return out;
}

}  // namespace p2psim::core
