#include "tests/driver_ref/reference.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>

namespace p2psim::driver_ref {

namespace {
uint64_t round_up(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}
}  // namespace

reference::reference(const ref_config& c) : m_config(c) {
  for (int g = 0; g < c.gpus; ++g) {
    m_frame_mapped.emplace_back(c.frames, 0);
    m_frame_holds.emplace_back(c.frames, 0);
    m_frame_vmm.emplace_back(c.frames, 0);
    m_vram.emplace_back(c.frames * page_bytes, 0);
  }
}

// ---- contexts and processes ----

int reference::create_context(int pid, int gpu) {
  m_contexts.push_back({pid, gpu, true, std::nullopt, {}});
  return int(m_contexts.size() - 1);
}

// Frees the live allocations of `pid` that `doomed` picks, lowest VA first: each free runs its
// own callbacks before the next.
std::vector<expected_callback> reference::free_all(
    int pid, const std::function<bool(const ref_allocation&)>& doomed) {
  std::vector<std::pair<uint64_t, int>> order;
  for (size_t i = 0; i < m_allocations.size(); ++i)
    if (m_allocations[i].alive && m_allocations[i].pid == pid && doomed(m_allocations[i]))
      order.push_back({m_allocations[i].va, int(i)});
  std::sort(order.begin(), order.end());
  std::vector<expected_callback> out;
  for (const auto& entry : order) {
    auto cbs = free_allocation(entry.second, pid);
    out.insert(out.end(), cbs.begin(), cbs.end());
  }
  return out;
}

std::vector<expected_callback> reference::destroy_context(int ctx) {
  auto out =
      free_all(m_contexts.at(ctx).pid, [&](const ref_allocation& a) { return a.ctx == ctx; });
  end_ipc([&](int c) { return c == ctx; });
  m_contexts[ctx].alive = false;
  for (auto& b : m_host)
    if (b.ctx == ctx) b.alive = false;
  return out;
}

std::vector<expected_callback> reference::process_exit(int pid) {
  auto out = free_all(pid, [](const ref_allocation&) { return true; });
  end_ipc([&](int c) { return m_contexts.at(c).pid == pid; });
  auto vmm = unmap_all(pid);  // its mappings go, then its handles
  out.insert(out.end(), vmm.begin(), vmm.end());
  for (auto& c : m_contexts)
    if (c.pid == pid) c.alive = false;
  for (auto& b : m_host)
    if (b.pid == pid) b.alive = false;
  for (size_t e = 0; e < m_exports.size(); ++e)  // its descriptors close with it
    if (m_exports[e].pid == pid && m_exports[e].open) close_export(int(e));
  return out;
}

int reference::context_of_tokens(uint64_t p2p, uint32_t va_space) const {
  for (size_t i = 0; i < m_contexts.size(); ++i)
    if (m_contexts[i].alive && m_contexts[i].tokens &&
        *m_contexts[i].tokens == std::make_pair(p2p, va_space))
      return int(i);
  return -1;
}

std::string reference::learn_tokens(int ctx, uint64_t p2p, uint32_t va_space) {
  ref_context& c = m_contexts.at(ctx);
  if (c.tokens) {
    if (*c.tokens != std::make_pair(p2p, va_space))
      return "P2P_TOKENS changed for one context (5.6)";
    return "";
  }
  for (const auto& o : m_contexts)
    if (o.tokens && o.tokens->second == va_space)
      return "two contexts share a vaSpaceToken (5.6: it names one VA space)";
  c.tokens = {p2p, va_space};
  return "";
}

// ---- allocations ----

uint64_t reference::frames_free(int gpu) const {
  uint64_t n = 0;
  for (uint64_t f = 0; f < m_config.frames; ++f) n += !frame_in_use(gpu, f);
  return n;
}

bool reference::frame_in_use(int gpu, uint64_t f) const {
  return m_frame_mapped.at(gpu).at(f) > 0 || m_frame_holds.at(gpu).at(f) > 0 ||
         m_frame_vmm.at(gpu).at(f) > 0;
}

bool reference::may_run_out(int ctx, uint64_t size) const {
  ref_allocation a;
  a.size = size;
  const uint64_t most_pages = a.reserve() / page_bytes + 2;
  return frames_free(m_contexts.at(ctx).gpu) < most_pages;
}

reference::export_result reference::predict_export(int pid, bool has_context, uint64_t va,
                                                   uint64_t size, uint64_t flags) const {
  constexpr uint64_t cpu_page = 4096;
  if (!va || !size || va % cpu_page || size % cpu_page || va + size < va)
    return export_result::invalid_value;
  if (flags && !(flags & 1)) return export_result::invalid_value;
  if (!has_context) return export_result::invalid_context;
  int gpu = -1;
  for (uint64_t n = va / page_bytes; n <= (va + size - 1) / page_bytes; ++n) {
    const ref_page* p = page(pid, n);
    if (!p || p->imported || (gpu >= 0 && p->gpu != gpu)) return export_result::invalid_value;
    gpu = p->gpu;
  }
  return flags & 1 ? export_result::not_supported : export_result::success;
}

bool reference::export_undecided(int pid, uint64_t va, uint64_t size) const {
  if (!size || va + size < va) return false;
  for (uint64_t n = va / page_bytes; n <= (va + size - 1) / page_bytes; ++n) {
    if (page(pid, n)) continue;
    const uint64_t chunk = n * page_bytes / chunk_bytes;
    for (const ref_allocation& a : m_allocations)
      if (a.alive && a.pid == pid && a.size <= chunk_bytes && a.va / chunk_bytes == chunk)
        return true;
  }
  return false;
}

int reference::export_range(int pid, uint64_t va, uint64_t size) {
  std::set<uint64_t> pages;
  for (uint64_t n = va / page_bytes; n <= (va + size - 1) / page_bytes; ++n) pages.insert(n);
  for (const ref_allocation& a : m_allocations)  // every allocation it touches, whole
    if (a.alive && a.pid == pid && a.va < va + size && a.va + a.reserve() > va)
      for (uint64_t n = a.first_page(); n <= a.last_page(); ++n) pages.insert(n);
  ref_export e;
  e.pid = pid;
  for (uint64_t n = va / page_bytes; n <= (va + size - 1) / page_bytes; ++n)
    e.range_frames.push_back(page(pid, n)->frame);
  for (uint64_t n : pages) {
    const ref_page* p = page(pid, n);
    e.gpu = p->gpu;
    e.frames.push_back(p->frame);
    ++m_frame_holds[p->gpu][p->frame];
  }
  m_exports.push_back(e);
  return int(m_exports.size() - 1);
}

void reference::close_export(int i) {
  ref_export& e = m_exports.at(i);
  if (!e.open) return;
  e.open = false;
  if (e.imports == 0)
    for (uint64_t f : e.frames) --m_frame_holds[e.gpu][f];
}

int reference::predict_import(int i) const {
  const ref_export& e = m_exports.at(i);
  if (!e.open) return -EBADF;
  std::set<uint64_t> fresh;
  uint64_t pages = 0;
  for (uint64_t f : e.range_frames) {
    ++pages;
    bool mapped = false;
    if (m_config.share_bar1)
      for (const auto& q : m_pins)
        if (q.st != pin_state::ended && q.gpu == e.gpu &&
            std::find(q.frames.begin(), q.frames.end(), f) != q.frames.end())
          mapped = true;
    if (!mapped) fresh.insert(f);
  }
  const uint64_t needed = m_config.share_bar1 ? fresh.size() : pages;
  const uint64_t capacity = m_config.bar1_pages - m_config.bar1_reserved;
  return needed > capacity - bar1_in_use(e.gpu) ? -ENOMEM : 0;
}

int reference::add_import(int i, int pid) {
  ref_export& e = m_exports.at(i);
  ++e.imports;
  ref_pin p;
  p.caller = p.memory_pid = pid;
  p.ctx = -2;
  p.gpu = e.gpu;
  p.persistent = true;  // nothing revokes it: the exporter never moves its memory
  p.by_kmd = true;
  p.dma_buf = true;
  p.frames = e.range_frames;
  for (uint64_t f : p.frames) ++m_frame_holds[e.gpu][f];
  m_pins.push_back(p);
  return int(m_pins.size() - 1);
}

void reference::release_import(int pin, int i) {
  end_pin(pin);
  ref_export& e = m_exports.at(i);
  if (--e.imports == 0 && !e.open)
    for (uint64_t f : e.frames) --m_frame_holds[e.gpu][f];
}

const ref_page* reference::page(int pid, uint64_t n) const {
  auto p = m_pages.find(pid);
  if (p == m_pages.end()) return nullptr;
  auto it = p->second.find(n);
  return it == p->second.end() ? nullptr : &it->second;
}

std::string reference::learn_allocation(
    int ctx, uint64_t va, uint64_t size,
    const std::map<uint64_t, std::pair<int, uint64_t>>& frames) {
  const ref_context& c = m_contexts.at(ctx);
  if (va < uva_begin || va >= uva_end || size > uva_end - va)
    return fmt::format("0x{:x}+0x{:x} is outside the UVA range (7.1)", va, size);
  ref_allocation mine{c.pid, ctx, va, size, true, std::nullopt, false};
  if (va % granule_bytes || (size > chunk_bytes && va % chunk_bytes))
    return fmt::format("0x{:x} is not aligned for 0x{:x} bytes", va, size);
  for (const auto& a : m_allocations)
    if (a.alive && a.pid == c.pid && va < a.va + a.reserve() && a.va < va + mine.reserve())
      return fmt::format("0x{:x}+0x{:x} overlaps the live 0x{:x}+0x{:x}", va, size, a.va, a.size);
  auto& pages = m_pages[c.pid];
  std::set<uint64_t> fresh_frames;
  for (uint64_t n = mine.first_page(); n <= mine.last_page(); ++n) {
    auto f = frames.find(n);
    if (f == frames.end()) return fmt::format("VA page 0x{:x} has no frame", n * page_bytes);
    auto it = pages.find(n);
    if (it != pages.end()) {
      const ref_page& p = it->second;
      if (p.ctx != ctx || p.allocations == 0)
        return fmt::format("VA page 0x{:x} holds another context's memory", n * page_bytes);
      if (m_frame_holds[p.gpu][p.frame])
        return fmt::format("VA page 0x{:x} is pinned: its free bytes must not be handed out",
                           n * page_bytes);
      if (f->second != std::make_pair(p.gpu, p.frame))
        return fmt::format("VA page 0x{:x} changed its frame", n * page_bytes);
      continue;
    }
    auto [gpu, frame] = f->second;
    if (gpu != c.gpu) return fmt::format("a frame of GPU {} for a context of GPU {}", gpu, c.gpu);
    if (frame >= m_config.frames || frame_in_use(gpu, frame) || !fresh_frames.insert(frame).second)
      return fmt::format("frame {} of GPU {} handed out while in use (mapped {}, held by {} pins)",
                         frame, gpu, frame < m_config.frames ? m_frame_mapped[gpu][frame] : -1,
                         frame < m_config.frames ? m_frame_holds[gpu][frame] : -1);
  }
  for (uint64_t n = mine.first_page(); n <= mine.last_page(); ++n) {
    auto& p = pages[n];
    if (p.allocations == 0) {
      p = {ctx, c.gpu, frames.at(n).second, 0};
      m_frame_mapped[c.gpu][p.frame] = 1;
    }
    ++p.allocations;
  }
  if (size <= chunk_bytes) {  // the chunk it lies in: a live neighbour's, else a new one
    mine.chunk = ++m_chunks;
    for (const auto& a : m_allocations)
      if (a.alive && a.pid == c.pid && a.size <= chunk_bytes &&
          a.va / chunk_bytes == va / chunk_bytes)
        mine.chunk = a.chunk;
  }
  m_allocations.push_back(mine);
  return "";
}

int reference::allocation_at(int pid, uint64_t va, uint64_t bytes) const {
  for (size_t i = 0; i < m_allocations.size(); ++i) {
    const auto& a = m_allocations[i];
    if (a.alive && a.pid == pid && va >= a.va && va < a.end() && bytes <= a.end() - va)
      return int(i);
  }
  return -1;
}

std::string reference::learn_buffer_id(int alloc, uint64_t id) {
  ref_allocation& a = m_allocations.at(alloc);
  if (a.buffer_id) return *a.buffer_id == id ? "" : "BUFFER_ID changed for a live buffer (6.5)";
  auto [it, fresh] = m_buffer_ids.try_emplace(id, alloc);
  if (!fresh)
    return fmt::format("BUFFER_ID {} was already allocation #{}'s (6.5: unique)", id, it->second);
  a.buffer_id = id;
  return "";
}

std::vector<int> reference::doomed_pins(int pid, const std::vector<uint64_t>& emptied) const {
  std::vector<int> out;
  for (size_t i = 0; i < m_pins.size(); ++i) {
    const ref_pin& p = m_pins[i];
    if (p.st != pin_state::live || p.persistent || p.memory_pid != pid) continue;
    for (uint64_t n : emptied)
      if (n >= p.va / page_bytes && n < (p.va + p.length) / page_bytes) {
        out.push_back(int(i));
        break;
      }
  }
  return out;  // oldest pin first
}

std::vector<expected_callback> reference::free_allocation(int i, int freeing_pid) {
  ref_allocation& a = m_allocations.at(i);
  a.alive = false;
  auto& pages = m_pages[a.pid];
  std::vector<uint64_t> emptied;
  for (uint64_t n = a.first_page(); n <= a.last_page(); ++n)
    if (--pages.at(n).allocations == 0) emptied.push_back(n);
  std::vector<expected_callback> out;
  revoke_all(doomed_pins(a.pid, emptied), freeing_pid, out);
  for (uint64_t n : emptied) {
    const ref_page& p = pages.at(n);
    m_frame_mapped[p.gpu][p.frame] = 0;
    pages.erase(n);
  }
  return out;
}

void reference::revoke_all(const std::vector<int>& pins, int freeing_pid,
                           std::vector<expected_callback>& out) {
  for (int p : pins)
    if (m_pins[p].st == pin_state::live) run_callback(p, freeing_pid, out);
}

void reference::run_callback(int i, int freeing_pid, std::vector<expected_callback>& out) {
  m_pins[i].st = pin_state::in_callback;
  expected_callback e;
  e.pin = i;
  e.action = m_pins[i].by_kmd ? callback_action::free_table : m_pins[i].action;
  const size_t slot = out.size();
  out.push_back(e);
  switch (e.action) {
    case callback_action::free_table:
    case callback_action::nothing:
      break;
    case callback_action::put_self:
      e.target_pin = i;
      put_pages(freeing_pid, 0, 0, i);  // in its own callback: nothing happens
      break;
    case callback_action::get_pages_same:
    case callback_action::get_pages_other: {
      pin_request r;
      r.caller = freeing_pid;
      if (e.action == callback_action::get_pages_same) {
        r.va = m_pins[i].va;
        r.length = m_pins[i].length;
      } else {
        int target = -1;  // the newest live allocation of the freeing process
        for (size_t k = 0; k < m_allocations.size(); ++k)
          if (m_allocations[k].alive && m_allocations[k].pid == freeing_pid) target = int(k);
        if (target < 0) break;  // nothing to pin: the callback does nothing
        const auto& a = m_allocations[target];
        r.va = a.va / page_bytes * page_bytes;
        r.length = round_up(a.end(), page_bytes) - r.va;
      }
      e.va = r.va;
      e.length = r.length;
      e.result = predict_get_pages(r);
      if (e.result == 0) {
        out[slot] = e;  // the new pin's index comes after this callback's
        get_pages(r, callback_action::free_table, false);
      }
      break;
    }
    case callback_action::put_other: {
      for (size_t k = 0; k < m_pins.size(); ++k) {
        const ref_pin& p = m_pins[k];
        if (int(k) != i && p.st == pin_state::live && !p.persistent && !p.by_kmd &&
            p.memory_pid == freeing_pid)
          e.target_pin = int(k);
      }
      if (e.target_pin >= 0) put_pages(freeing_pid, 0, 0, e.target_pin);
      break;
    }
    case callback_action::count:
      break;
  }
  out[slot] = e;
  end_pin(i);  // after the callback returns (5.3)
}

// ---- nv-p2p ----

int reference::predict_get_pages(const pin_request& r) const {
  if (!r.table || (!r.persistent && !r.callback) || (r.persistent && r.flags)) return -EINVAL;
  if (r.va % page_bytes || r.length % page_bytes || r.length == 0 || r.va + r.length < r.va)
    return -EINVAL;
  int pid = r.caller, ctx = -1;
  if (!r.persistent && (r.p2p || r.va_space)) {
    ctx = context_of_tokens(r.p2p, r.va_space);
    if (ctx < 0) return -EINVAL;
    pid = m_contexts[ctx].pid;
  }
  std::optional<int> first_ctx;
  int gpu = -1;
  std::set<uint64_t> new_frames;
  uint64_t pin_pages = 0;
  for (uint64_t n = r.va / page_bytes; n < (r.va + r.length) / page_bytes; ++n) {
    const ref_page* p = page(pid, n);
    if (!p || p->allocations == 0) return -EINVAL;
    // VMM memory is the process's: any context of it may pin it, if made for RDMA.
    if (p->ctx < 0 && !m_vmm_memory.at(p->memory).rdma) return -EINVAL;
    if (p->imported) return -EINVAL;  // another process's, opened by IPC
    if (ctx >= 0 && p->ctx >= 0 && p->ctx != ctx) return -EINVAL;
    if (first_ctx && p->ctx != *first_ctx) return -EINVAL;
    first_ctx = p->ctx;
    gpu = p->gpu;
    ++pin_pages;
    bool mapped = false;
    if (m_config.share_bar1)
      for (const auto& q : m_pins)
        if (q.st != pin_state::ended && q.gpu == gpu &&
            std::find(q.frames.begin(), q.frames.end(), p->frame) != q.frames.end())
          mapped = true;
    if (!mapped) new_frames.insert(p->frame);
  }
  const uint64_t needed = m_config.share_bar1 ? new_frames.size() : pin_pages;
  const uint64_t capacity = m_config.bar1_pages - m_config.bar1_reserved;
  if (needed > capacity - bar1_in_use(gpu)) return -ENOMEM;
  return 0;
}

int reference::get_pages(const pin_request& r, callback_action action, bool by_kmd) {
  ref_pin p;
  p.caller = r.caller;
  p.memory_pid = r.caller;
  if (!r.persistent && (r.p2p || r.va_space))
    p.memory_pid = m_contexts[context_of_tokens(r.p2p, r.va_space)].pid;
  p.va = r.va;
  p.length = r.length;
  p.persistent = r.persistent;
  p.by_kmd = by_kmd;
  p.action = action;
  for (uint64_t n = r.va / page_bytes; n < (r.va + r.length) / page_bytes; ++n) {
    const ref_page* pg = page(p.memory_pid, n);
    // A VMM pin is released with the tokens' context, if it was pinned with them.
    p.ctx = pg->ctx >= 0                               ? pg->ctx
            : (!r.persistent && (r.p2p || r.va_space)) ? context_of_tokens(r.p2p, r.va_space)
                                                       : -2;
    p.gpu = pg->gpu;
    p.frames.push_back(pg->frame);
    ++m_frame_holds[pg->gpu][pg->frame];
  }
  m_pins.push_back(p);
  return int(m_pins.size() - 1);
}

std::string reference::learn_bar1_pages(int i, const std::vector<uint64_t>& bus,
                                        uint64_t bar1_bus_base) {
  ref_pin& p = m_pins.at(i);
  if (bus.size() != p.frames.size())
    return fmt::format("{} page table entries for {} pages", bus.size(), p.frames.size());
  std::vector<uint64_t> pages;
  for (size_t k = 0; k < bus.size(); ++k) {
    if (bus[k] < bar1_bus_base || (bus[k] - bar1_bus_base) % page_bytes)
      return fmt::format("entry {} at 0x{:x} is not a BAR1 page", k, bus[k]);
    const uint64_t b = (bus[k] - bar1_bus_base) / page_bytes;
    if (b < m_config.bar1_reserved || b >= m_config.bar1_pages)
      return fmt::format("entry {} is BAR1 page {}, outside the usable aperture", k, b);
    // Another pin's page: only the same frame, and only where BAR1 pages are shared (4.7).
    for (size_t j = 0; j < m_pins.size(); ++j) {
      const ref_pin& q = m_pins[j];
      if (int(j) == i || q.st == pin_state::ended || q.gpu != p.gpu) continue;
      for (size_t e = 0; e < q.bar1_pages.size(); ++e)
        if (q.bar1_pages[e] == b && (!m_config.share_bar1 || q.frames[e] != p.frames[k]))
          return fmt::format("BAR1 page {} also maps pin #{}'s frame {}", b, j, q.frames[e]);
        else if (m_config.share_bar1 && q.frames[e] == p.frames[k] && q.bar1_pages[e] != b)
          return fmt::format("frame {} already has BAR1 page {}: sharing needs the same",
                             p.frames[k], q.bar1_pages[e]);
    }
    for (size_t e = 0; e < k; ++e)
      if (pages[e] == b && p.frames[e] != p.frames[k])
        return fmt::format("BAR1 page {} used twice in one pin", b);
    pages.push_back(b);
  }
  p.bar1_pages = pages;
  return "";
}

bool reference::put_pages(int caller, uint64_t p2p, uint32_t va_space, int i) {
  if (i < 0) return false;
  ref_pin& p = m_pins.at(i);
  if (p.st != pin_state::live || p.persistent) return false;
  if (p2p || va_space) {
    if (context_of_tokens(p2p, va_space) != p.ctx) return false;
  } else if (caller != p.memory_pid) {
    return false;
  }
  end_pin(i);
  return true;
}

int reference::put_pages_persistent(int i, uint32_t flags) {
  if (flags) return -EINVAL;
  if (i < 0) return 0;
  ref_pin& p = m_pins.at(i);
  if (p.st != pin_state::live || !p.persistent) return -EINVAL;
  end_pin(i);
  return 0;
}

void reference::end_pin(int i) {
  ref_pin& p = m_pins.at(i);
  p.st = pin_state::ended;
  for (uint64_t f : p.frames) --m_frame_holds[p.gpu][f];
  for (auto& m : m_mappings)
    if (m.pin == i) m.live = false;
}

int reference::dma_map(int i, int peer) {
  if (i < 0 || m_pins.at(i).st != pin_state::live) return -EINVAL;
  m_mappings.push_back({i, peer, true, {}});
  return int(m_mappings.size() - 1);
}

void reference::learn_mapping(int m, std::vector<uint64_t> addresses) {
  m_mappings.at(m).addresses = std::move(addresses);
}

bool reference::dma_unmap(int m, int table_pin) {
  if (table_pin < 0 || m_pins.at(table_pin).st != pin_state::live) return false;
  ref_mapping& mp = m_mappings.at(m);
  if (!mp.live || mp.pin != table_pin) return false;
  mp.live = false;
  return true;
}

// ---- BAR1 ----

std::optional<uint64_t> reference::bar1_frame(int gpu, uint64_t b) const {
  for (const auto& p : m_pins)
    if (p.st != pin_state::ended && p.gpu == gpu)
      for (size_t e = 0; e < p.bar1_pages.size(); ++e)
        if (p.bar1_pages[e] == b) return p.frames[e];
  return std::nullopt;
}

uint64_t reference::bar1_in_use(int gpu) const {
  std::set<uint64_t> frames;
  uint64_t entries = 0;
  for (const auto& p : m_pins)
    if (p.st != pin_state::ended && p.gpu == gpu) {
      frames.insert(p.frames.begin(), p.frames.end());
      entries += p.frames.size();
    }
  return m_config.share_bar1 ? frames.size() : entries;
}

}  // namespace p2psim::driver_ref
