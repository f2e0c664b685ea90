// The NVIDIA driver as a dma-buf exporter (cuMemGetHandleForAddressRange with
// CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD; GPUDirect RDMA 13.3, 4.1): which ranges it exports and
// what a buffer keeps alive, as driver 580 does on an H200 (tests/data/cuda_probe/
// h200_cuda13_dmabuf.txt).
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>

#include "models/driver/nvidia/nvidia_driver.h"
#include "models/iommu/iommu.h"

namespace p2psim::nv {

namespace {
uint64_t chunk_base(uint64_t va) {
  return va / alloc_chunk_bytes * alloc_chunk_bytes;
}
}  // namespace

// What a dma-buf of this driver holds: the VRAM frames of every allocation its range touches,
// from the export until the buffer's release (the destructor, run when its last descriptor or
// importer reference goes). A map gives the importer the range's BAR1 addresses, translated by
// its IOMMU when that translates (as nvidia_p2p_dma_map_pages does), and takes BAR1 pages
// shared with the pins and mappings of the same memory (guide 4.7); the unmap gives them back.
// The memory never moves, so the exporter never calls move_notify.
class nvidia_driver::exported_memory : public kernel::dma_buf_exporter {
 public:
  exported_memory(nvidia_driver& d, int gpu, std::vector<uint64_t> held,
                  std::vector<uint64_t> range, uint64_t first_offset, uint64_t size)
      : m_driver(d),
        m_gpu(gpu),
        m_held(std::move(held)),
        m_range(std::move(range)),
        m_first_offset(first_offset),
        m_size(size) {
    for (uint64_t f : m_held) m_driver.m_gpus[m_gpu].frames.hold(f);
  }
  ~exported_memory() override {
    // The core unmaps every mapping before a release, but when the OS itself goes: then the
    // importers' devices (and their IOMMUs) may be gone, and only BAR1, the driver's, is undone.
    for (auto& [sgt, m] : m_maps) {
      m.iovas.clear();
      release(m);
    }
    for (uint64_t f : m_held) m_driver.m_gpus[m_gpu].frames.let_go(f);
  }
  const char* name() const override { return "nv_dmabuf"; }

  int map(const kernel::dma_buf_attachment& a, kernel::sg_table& out) override {
    // Device memory behind a BAR, not struct pages: a dynamic importer must say it can reach
    // it (nv_dma_buf_map refuses, and the core turns the refusal into -ENOMEM).
    if (a.importer_ops && !a.peer2peer)
      return m_driver.refuse(ENOMEM, "dma_buf_map_attachment",
                             "a dynamic attachment without allow_peer2peer");
    gpu_state& gs = m_driver.m_gpus[m_gpu];
    if (m_driver.bar1_pages_needed(gs, m_range) > gs.res.bar1->free_pages()) {
      ++gs.bar1_exhausted;
      ++m_driver.m_counters.bar1_exhausted;
      return m_driver.refuse(ENOMEM, "dma_buf_map_attachment",
                             fmt::format("BAR1 of {} exhausted", gs.res.name));
    }
    mapping m;
    iommu::iommu_domain* io = a.dev ? a.dev->iommu : nullptr;
    const bool translated = io && io->mode() == iommu::iommu_mode::translating;
    uint64_t mapped = 0;  // bytes of the range in the segments so far
    for (uint64_t f : m_range) {
      const uint64_t b = m_driver.map_bar1(gs, f);
      m.bar1_pages.push_back(b);
      uint64_t address = gs.res.bar1_bus_base + b * gpu_page_bytes;
      if (translated) {
        auto iova = io->map(address, gpu_page_bytes);
        if (!iova) {
          release(m);
          return m_driver.refuse(ENOMEM, "dma_buf_map_attachment", "the IOVA space is full");
        }
        m.iommu = io;
        m.iovas.push_back(*iova);
        address = *iova;
      }
      // The range's part of this page, joined to the segment before when they are adjacent.
      const uint64_t offset = m.bar1_pages.size() == 1 ? m_first_offset : 0;
      const uint64_t length = std::min(gpu_page_bytes - offset, m_size - mapped);
      mapped += length;
      if (!out.segments.empty() &&
          out.segments.back().address + out.segments.back().length == address + offset)
        out.segments.back().length += length;
      else
        out.segments.push_back({address + offset, length});
    }
    m_maps.emplace(&out, std::move(m));
    // The driver maps BAR1 pages as nvidia_p2p_get_pages does; no separate figure for a
    // dma-buf map was measured, so it costs what a pin of as many pages costs.
    m_driver.charge(m_driver.m_config.pin_base_ns +
                    m_driver.m_config.pin_page_ns * double(m_range.size()));
    ++m_driver.m_counters.dma_buf_maps;
    return 0;
  }

  void unmap(const kernel::dma_buf_attachment&, const kernel::sg_table& sgt) override {
    auto it = m_maps.find(&sgt);
    if (it == m_maps.end()) return;
    release(it->second);
    m_maps.erase(it);
    m_driver.charge(m_driver.m_config.unpin_base_ns);
    ++m_driver.m_counters.dma_buf_unmaps;
  }

 private:
  struct mapping {
    std::vector<uint64_t> bar1_pages;  // one per page of the range, as far as it got
    iommu::iommu_domain* iommu = nullptr;
    std::vector<uint64_t> iovas;
  };
  void release(mapping& m) {
    gpu_state& gs = m_driver.m_gpus[m_gpu];
    for (uint64_t iova : m.iovas) m.iommu->unmap(iova, gpu_page_bytes);
    for (size_t i = 0; i < m.bar1_pages.size(); ++i)
      m_driver.unmap_bar1(gs, m_range[i], m.bar1_pages[i]);
    m.iovas.clear();
    m.bar1_pages.clear();
  }

  nvidia_driver& m_driver;
  int m_gpu;
  std::vector<uint64_t> m_held;   // every page of the allocations touched, each once
  std::vector<uint64_t> m_range;  // the range's pages, in order
  uint64_t m_first_offset;        // where the range starts in its first page
  uint64_t m_size;
  std::map<const kernel::sg_table*, mapping> m_maps;
};

bool nvidia_driver::exportable(kernel::pid_t pid, uint64_t va, uint64_t size) const {
  auto pit = m_processes.find(pid);
  if (pit == m_processes.end() || size == 0 || va + size < va) return false;
  const process_state& ps = pit->second;
  int gpu = -1;
  for (uint64_t q = va / gpu_page_bytes; q <= (va + size - 1) / gpu_page_bytes; ++q) {
    int on = -1;
    if (auto it = ps.pages.find(q); it != ps.pages.end())
      on = it->second.imported ? -1 : it->second.gpu;  // another process's memory (IPC): no
    else if (auto c = ps.chunks.find(chunk_base(q * gpu_page_bytes)); c != ps.chunks.end())
      on = m_contexts.at(c->second.ctx).gpu;
    if (on < 0 || (gpu >= 0 && on != gpu)) return false;  // unmapped, or another GPU's
    gpu = on;
  }
  return true;
}

int nvidia_driver::export_dma_buf(kernel::pid_t pid, uint64_t va, uint64_t size) {
  if (!exportable(pid, va, size))
    return refuse(EINVAL, "dma-buf export refused",
                  fmt::format("0x{:x}+0x{:x} is not mapped device memory of one GPU", va, size));
  process_state& ps = m_processes.at(pid);
  const uint64_t first = va / gpu_page_bytes, last = (va + size - 1) / gpu_page_bytes;
  // A chunk's page no allocation has used yet gets its frame now, as the chunk's other pages
  // did: the memory the buffer reaches is the chunk's.
  for (uint64_t q = first; q <= last; ++q) {
    if (ps.pages.count(q)) continue;
    const chunk& ch = ps.chunks.at(chunk_base(q * gpu_page_bytes));
    const int gpu = m_contexts.at(ch.ctx).gpu;
    auto frame = m_gpus[gpu].frames.take();
    if (!frame) return refuse(ENOMEM, "dma-buf export refused", "no VRAM left for a chunk page");
    ps.pages[q] = {ch.ctx, gpu, *frame, 0, {}};
  }
  // The pages of the range and of every allocation it touches.
  std::vector<uint64_t> pages;
  for (uint64_t q = first; q <= last; ++q) pages.push_back(q);
  auto it = ps.allocations.upper_bound(va);
  if (it != ps.allocations.begin()) --it;
  for (; it != ps.allocations.end() && it->first < va + size; ++it) {
    const allocation& a = it->second;
    if (a.va + a.reserve <= va) continue;
    for (uint64_t q = a.va / gpu_page_bytes; q <= (a.va + a.reserve - 1) / gpu_page_bytes; ++q)
      pages.push_back(q);
  }
  std::sort(pages.begin(), pages.end());
  pages.erase(std::unique(pages.begin(), pages.end()), pages.end());
  const int gpu = ps.pages.at(first).gpu;
  std::vector<uint64_t> held, range;
  for (uint64_t q : pages) held.push_back(ps.pages.at(q).frame);
  for (uint64_t q = first; q <= last; ++q) range.push_back(ps.pages.at(q).frame);
  ++m_counters.dma_buf_exports;
  return kernel::current_os().dma_bufs().export_fd(
      pid, size,
      std::make_unique<exported_memory>(*this, gpu, std::move(held), std::move(range),
                                        va % gpu_page_bytes, size));
}

void nvidia_driver::unmap_unused_pages(process_state& ps, uint64_t base) {
  for (uint64_t q = base / gpu_page_bytes; q < (base + alloc_chunk_bytes) / gpu_page_bytes; ++q)
    if (auto it = ps.pages.find(q); it != ps.pages.end() && it->second.allocations == 0) {
      m_gpus[it->second.gpu].frames.unmap(it->second.frame);
      ps.pages.erase(it);
    }
}

uint64_t nvidia_driver::vram_used_bytes(int gpu) const {
  return m_gpus.at(gpu).frames.used() * gpu_page_bytes;
}

}  // namespace p2psim::nv
