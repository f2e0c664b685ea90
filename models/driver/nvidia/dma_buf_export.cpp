// The NVIDIA driver as a dma-buf exporter (cuMemGetHandleForAddressRange with
// CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD; GPUDirect RDMA 13.3, 4.1): which ranges it exports and
// what a buffer keeps alive, as driver 580 does on an H200 (tests/data/cuda_probe/
// h200_cuda13_dmabuf.txt).
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>

#include "models/driver/nvidia/nvidia_driver.h"

namespace p2psim::nv {

namespace {
uint64_t chunk_base(uint64_t va) {
  return va / alloc_chunk_bytes * alloc_chunk_bytes;
}
}  // namespace

// The VRAM frames behind a dma-buf: held from the export until the buffer's release (the
// destructor, run when its last descriptor or importer reference goes).
class nvidia_driver::exported_memory : public kernel::dma_buf_exporter {
 public:
  exported_memory(nvidia_driver& d, int gpu, std::vector<uint64_t> frames)
      : m_driver(d), m_gpu(gpu), m_frames(std::move(frames)) {
    for (uint64_t f : m_frames) m_driver.m_gpus[m_gpu].frames.hold(f);
  }
  ~exported_memory() override {
    for (uint64_t f : m_frames) m_driver.m_gpus[m_gpu].frames.let_go(f);
  }
  const char* name() const override { return "nv_dmabuf"; }

 private:
  nvidia_driver& m_driver;
  int m_gpu;
  std::vector<uint64_t> m_frames;  // one per 64 KiB page, each once
};

bool nvidia_driver::exportable(kernel::pid_t pid, uint64_t va, uint64_t size) const {
  auto pit = m_processes.find(pid);
  if (pit == m_processes.end() || size == 0 || va + size < va) return false;
  const process_state& ps = pit->second;
  int gpu = -1;
  for (uint64_t q = va / gpu_page_bytes; q <= (va + size - 1) / gpu_page_bytes; ++q) {
    int on = -1;
    if (auto it = ps.pages.find(q); it != ps.pages.end())
      on = it->second.gpu;
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
  std::vector<uint64_t> frames;
  for (uint64_t q : pages) frames.push_back(ps.pages.at(q).frame);
  return kernel::current_os().files().export_fd(
      pid, size, std::make_unique<exported_memory>(*this, gpu, std::move(frames)));
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
