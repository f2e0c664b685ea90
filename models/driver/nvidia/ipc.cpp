// CUDA IPC in the NVIDIA driver (cuIpcGetMemHandle / cuIpcOpenMemHandle / cuIpcCloseMemHandle),
// as driver 580 behaves on an H200 (tests/data/cuda_probe/h200_cuda13_ipc.txt): an export is
// an allocation as another process maps it; the importer maps the exporter's whole span (the
// 2 MiB chunk a small allocation lies in, or a big one's own pages) in a context of its own,
// so two allocations of one chunk keep their distance, and a chunk made later at the same VA
// is mapped anew; each open of a mapped export counts,
// and the last close unmaps it. The memory stays while the export or an import holds it: the
// exporter's cuMemFree takes its VA, not the frames.
#include <fmt/format.h>

#include "models/driver/nvidia/nvidia_driver.h"

namespace p2psim::nv {

namespace {
uint64_t chunk_base(uint64_t va) {
  return va / alloc_chunk_bytes * alloc_chunk_bytes;
}
}  // namespace

uint64_t nvidia_driver::ipc_export_of(kernel::pid_t pid, uint64_t va) {
  const allocation* a = find_allocation(pid, va);
  if (!a || a->ipc_export) return 0;
  if (m_ipc_exports.count(a->buffer_id)) return a->buffer_id;
  const context* c = find_context(a->ctx);
  ipc_export e;
  e.pid = pid;
  e.ctx = a->ctx;
  e.gpu = c->gpu;
  e.span = a->in_chunk ? chunk_base(a->va) : a->va;
  e.span_bytes = a->in_chunk ? alloc_chunk_bytes : a->reserve;
  // Chunks and big allocations are numbered apart: the top bit tells them from each other.
  e.span_id =
      a->in_chunk ? (uint64_t(1) << 63) | m_processes.at(pid).chunks.at(e.span).id : a->buffer_id;
  e.offset = a->va - e.span;
  e.size = a->size;
  e.reserve = a->reserve;
  const uint64_t first = a->va / gpu_page_bytes, last = (a->va + a->reserve - 1) / gpu_page_bytes;
  e.first_page = first * gpu_page_bytes - e.span;
  const process_state& ps = m_processes.at(pid);
  for (uint64_t q = first; q <= last; ++q) {
    const uint64_t f = ps.pages.at(q).frame;
    m_gpus[e.gpu].frames.hold(f);
    e.frames.push_back(f);
  }
  m_ipc_exports[a->buffer_id] = std::move(e);
  return a->buffer_id;
}

const nvidia_driver::ipc_export* nvidia_driver::find_ipc_export(uint64_t id) const {
  auto it = m_ipc_exports.find(id);
  return it == m_ipc_exports.end() ? nullptr : &it->second;
}

nvidia_driver::ipc_open_result nvidia_driver::ipc_open(int ctx, uint64_t id, uint64_t& va) {
  const context* c = find_context(ctx);
  const ipc_export* e = find_ipc_export(id);
  if (!c || !e) return ipc_open_result::unknown;
  if (e->pid == c->pid) return ipc_open_result::own_process;
  process_state& ps = process(c->pid);
  uint64_t base = 0;
  for (auto& [b, s] : ps.ipc_spans)
    if (s.span_id == e->span_id) {
      if (s.ctx != ctx) return ipc_open_result::other_context;
      base = b;
    }
  if (!base) {
    auto free_page = [&](uint64_t page) { return !ps.pages.count(page); };
    auto b = take_ctx_va(ps, ctx, e->span_bytes, free_page, alloc_chunk_bytes,
                         e->span_bytes >= large_alloc_bytes);
    if (!b) return ipc_open_result::out_of_va;
    base = *b;
    ps.ipc_spans[base] = {ctx, e->span_id, e->span_bytes, {}};
  }
  ipc_span& s = ps.ipc_spans.at(base);
  va = base + e->offset;
  if (s.opens[id]++ > 0) return ipc_open_result::mapped;  // mapped already: one more open
  // Its pages, each holding the exporter's frame; a page two exports share (two allocations
  // of one 64 KiB page) is mapped once.
  for (size_t i = 0; i < e->frames.size(); ++i) {
    const uint64_t q = (base + e->first_page) / gpu_page_bytes + i;
    auto it = ps.pages.find(q);
    if (it != ps.pages.end()) {
      ++it->second.allocations;
      continue;
    }
    ps.pages[q] = {ctx, e->gpu, e->frames[i], 1, {}, true};
    m_gpus[e->gpu].frames.hold(e->frames[i]);
  }
  allocation a;
  a.va = va;
  a.size = e->size;
  a.reserve = e->reserve;
  a.ctx = ctx;
  a.buffer_id = m_next_buffer_id++;  // its own (driver 580: PA's BUFFER_ID is not A's)
  a.ipc_export = id;
  ps.allocations[va] = a;
  return ipc_open_result::mapped;
}

bool nvidia_driver::ipc_close(kernel::pid_t pid, uint64_t va) {
  auto pit = m_processes.find(pid);
  if (pit == m_processes.end()) return false;
  process_state& ps = pit->second;
  auto a = ps.allocations.find(va);
  if (a == ps.allocations.end() || !a->second.ipc_export) return false;
  const uint64_t id = a->second.ipc_export;
  auto s = std::prev(ps.ipc_spans.upper_bound(va));
  if (--s->second.opens.at(id) > 0) return true;
  s->second.opens.erase(id);
  free_allocation(pid, va, "cuIpcCloseMemHandle");
  if (s->second.opens.empty()) {
    give_back_va(ps, s->first, s->second.bytes, false);
    ps.ipc_spans.erase(s);
  }
  return true;
}

// The exporting context goes: its exports' memory goes with the last import of it.
void nvidia_driver::release_ipc_exports(int ctx) {
  for (auto it = m_ipc_exports.begin(); it != m_ipc_exports.end();)
    if (it->second.ctx == ctx) {
      for (uint64_t f : it->second.frames) m_gpus[it->second.gpu].frames.let_go(f);
      it = m_ipc_exports.erase(it);
    } else {
      ++it;
    }
}

}  // namespace p2psim::nv
