// The reference's CUDA IPC (docs/driver-model.md, "CUDA IPC"), written from that section: an
// export per allocation, holding its frames until the exporting context goes; imports that map
// the exporter's span in one context of the importer, counted per open, their pages holding
// the frames; and what each call returns.
#include <fmt/format.h>

#include "tests/driver_ref/reference.h"

namespace p2psim::driver_ref {

int reference::ipc_export(int pid, uint64_t ptr) {
  const int i = allocation_at(pid, ptr);
  if (i < 0) return -1;
  for (size_t e = 0; e < m_ipc_exports.size(); ++e)
    if (m_ipc_exports[e].alive && m_ipc_exports[e].alloc == i) return int(e);
  const ref_allocation& a = m_allocations[i];
  ref_ipc_export e;
  e.pid = pid;
  e.ctx = a.ctx;
  e.gpu = m_contexts.at(a.ctx).gpu;
  e.alloc = i;
  const bool small = a.size <= chunk_bytes;
  e.span = small ? ref_span_id{pid, a.chunk, 0} : ref_span_id{-1, -1, i};
  e.span_start = small ? a.va / chunk_bytes * chunk_bytes : a.va;
  e.span_bytes = small ? chunk_bytes : a.reserve();
  e.first_page = a.first_page();
  for (uint64_t n = a.first_page(); n <= a.last_page(); ++n) {
    const ref_page& p = m_pages.at(pid).at(n);
    e.frames.push_back(p.frame);
    ++m_frame_holds[p.gpu][p.frame];
  }
  m_ipc_exports.push_back(e);
  return int(m_ipc_exports.size() - 1);
}

reference::ipc_open_result reference::predict_ipc_open(int ctx, int e, unsigned flags,
                                                       bool reachable, int& span) const {
  span = -1;
  if (ctx < 0) return ipc_open_result::invalid_context;
  if (!(flags & 1)) return ipc_open_result::invalid_value;
  if (e < 0 || !m_ipc_exports.at(e).alive) return ipc_open_result::invalid_value;
  const ref_ipc_export& x = m_ipc_exports[e];
  const ref_context& c = m_contexts.at(ctx);
  if (!reachable && x.gpu != c.gpu) return ipc_open_result::unreachable;
  if (x.pid == c.pid) return ipc_open_result::invalid_context;  // its own
  for (size_t s = 0; s < m_ipc_spans.size(); ++s) {
    const ref_ipc_span& o = m_ipc_spans[s];
    if (!o.alive || o.pid != c.pid || o.span != x.span) continue;
    if (o.ctx != ctx) return ipc_open_result::invalid_handle;  // open in another context
    span = int(s);
  }
  return ipc_open_result::mapped;
}

std::string reference::learn_ipc_open(int ctx, int e, uint64_t ptr) {
  const ref_ipc_export& x = m_ipc_exports.at(e);
  const ref_context& c = m_contexts.at(ctx);
  const uint64_t offset = m_allocations.at(x.alloc).va - x.span_start;
  int s = -1;
  if (predict_ipc_open(ctx, e, 1, true, s) != ipc_open_result::mapped)
    return "an open the reference refuses";
  auto& pages = m_pages[c.pid];
  if (s < 0) {  // a new span: page-aligned, on VA the process does not use
    const uint64_t base = ptr - offset;
    if (ptr < offset || base % chunk_bytes)
      return fmt::format("an import at 0x{:x}: its span does not start on a 2 MiB boundary", ptr);
    if (base < uva_begin || base + x.span_bytes > uva_end)
      return fmt::format("an import at 0x{:x} is outside the UVA range (7.1)", ptr);
    for (uint64_t n = base / page_bytes; n < (base + x.span_bytes) / page_bytes; ++n)
      if (pages.count(n))
        return fmt::format("an import's span at 0x{:x} covers VA page 0x{:x} in use", base,
                           n * page_bytes);
    for (const ref_allocation& a : m_allocations)
      if (a.alive && a.pid == c.pid && a.va < base + x.span_bytes && base < a.va + a.reserve())
        return fmt::format("an import's span at 0x{:x} overlaps an allocation", base);
    m_ipc_spans.push_back({c.pid, ctx, x.span, base, x.span_bytes, {}, true});
    s = int(m_ipc_spans.size() - 1);
  }
  ref_ipc_span& sp = m_ipc_spans[s];
  if (ptr != sp.base + offset)
    return fmt::format("an import at 0x{:x}, not at its span's 0x{:x} + 0x{:x}", ptr, sp.base,
                       offset);
  if (sp.opens[e]++ > 0) return "";  // one more open of a mapped export
  const uint64_t first = (sp.base + x.first_page * page_bytes - x.span_start) / page_bytes;
  for (size_t i = 0; i < x.frames.size(); ++i) {
    ref_page& p = pages[first + i];
    if (p.allocations == 0) {
      p = {ctx, x.gpu, x.frames[i], 0, -1, true};
      ++m_frame_holds[x.gpu][x.frames[i]];
    }
    ++p.allocations;
  }
  return "";
}

void reference::unmap_import(ref_ipc_span& s, int e) {
  const ref_ipc_export& x = m_ipc_exports.at(e);
  auto& pages = m_pages[s.pid];
  const uint64_t first = (s.base + x.first_page * page_bytes - x.span_start) / page_bytes;
  for (size_t i = 0; i < x.frames.size(); ++i) {
    ref_page& p = pages.at(first + i);
    if (--p.allocations > 0) continue;
    --m_frame_holds[p.gpu][p.frame];
    pages.erase(first + i);
  }
  s.opens.erase(e);
  if (s.opens.empty()) s.alive = false;
}

bool reference::ipc_close(int pid, uint64_t ptr) {
  for (ref_ipc_span& s : m_ipc_spans) {
    if (!s.alive || s.pid != pid) continue;
    for (auto& [e, n] : s.opens)
      if (s.base + m_allocations.at(m_ipc_exports.at(e).alloc).va -
              m_ipc_exports.at(e).span_start ==
          ptr) {
        if (--n == 0) unmap_import(s, e);
        return true;
      }
  }
  return false;
}

std::vector<std::pair<uint64_t, int>> reference::ipc_imports(int pid) const {
  std::vector<std::pair<uint64_t, int>> out;
  for (const ref_ipc_span& s : m_ipc_spans)
    if (s.alive && s.pid == pid)
      for (const auto& [e, n] : s.opens)
        out.push_back({s.base + m_allocations.at(m_ipc_exports.at(e).alloc).va -
                           m_ipc_exports.at(e).span_start,
                       e});
  return out;
}

// The contexts `ending` picks go: their imports are unmapped, their exports let go of their
// frames (imports elsewhere keep holding them).
void reference::end_ipc(const std::function<bool(int ctx)>& ending) {
  for (ref_ipc_span& s : m_ipc_spans)
    if (s.alive && ending(s.ctx)) {
      std::vector<int> exports;
      for (const auto& [e, n] : s.opens) exports.push_back(e);
      for (int e : exports) unmap_import(s, e);
      s.alive = false;
    }
  for (ref_ipc_export& x : m_ipc_exports)
    if (x.alive && ending(x.ctx)) {
      x.alive = false;
      for (uint64_t f : x.frames) --m_frame_holds[x.gpu][f];
    }
}

}  // namespace p2psim::driver_ref
