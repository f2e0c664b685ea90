#include "models/driver/nvidia/nvidia_driver.h"

#include <fmt/format.h>
#include <algorithm>

#include "models/driver/nvidia/pin.h"

namespace p2psim::nv {

namespace {
uint64_t round_up(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}
// The base of the 2 MiB chunk holding `va`.
uint64_t round_down(uint64_t va) {
  return va / alloc_chunk_bytes * alloc_chunk_bytes;
}
}  // namespace

nvidia_driver::nvidia_driver(const driver_config& c) : m_config(c), m_rng(c.seed) {}
nvidia_driver::~nvidia_driver() = default;

int nvidia_driver::add_gpu(const gpu_resources& g) {
  if (!g.bar1 || !g.vram) throw std::invalid_argument("a GPU needs its BAR1 table and VRAM");
  m_gpus.push_back({g, vram_frames(g.vram->capacity() / gpu_page_bytes), {}, 0});
  return int(m_gpus.size() - 1);
}

void nvidia_driver::note(const std::string& what, const std::string& detail) {
  if (m_events.size() < max_events)
    m_events.push_back({what, detail});
  else
    ++m_counters.events_dropped;
}

int nvidia_driver::refuse(int err, const std::string& what, const std::string& detail) {
  ++m_counters.refused;
  note(what, detail);
  return -err;
}

int nvidia_driver::tolerate(const std::string& what, const std::string& detail) {
  ++m_counters.misuse;
  note(what, detail);
  return 0;
}

double nvidia_driver::take_elapsed_ns() {
  double t = m_elapsed_ns;
  m_elapsed_ns = 0;
  return t;
}

uint64_t nvidia_driver::bar1_used_bytes(int gpu) const {
  const auto& b = *m_gpus.at(gpu).res.bar1;
  return b.reserved() + b.mapped_pages() * gpu::bar1_page_bytes;
}

nvidia_driver::process_state& nvidia_driver::process(kernel::pid_t pid) {
  return m_processes[pid];
}

// ---- contexts ----

int nvidia_driver::create_context(kernel::pid_t pid, int gpu) {
  if (gpu < 0 || gpu >= gpu_count()) return 0;
  context c;
  c.id = m_next_ctx++;
  c.pid = pid;
  c.gpu = gpu;
  if (m_config.random_p2p_token) {
    do c.p2p_token = m_rng();
    while (!c.p2p_token || m_tokens.count({c.p2p_token, m_next_va_space}));  // 0 means "none"
  }  // else 0, as driver 580 hands out: the vaSpaceToken alone names the context
  c.va_space_token = m_next_va_space++;
  m_contexts[c.id] = c;
  m_tokens[{c.p2p_token, c.va_space_token}] = c.id;
  process(pid);
  return c.id;
}

const nvidia_driver::context* nvidia_driver::find_context(int ctx) const {
  auto it = m_contexts.find(ctx);
  return it == m_contexts.end() ? nullptr : &it->second;
}

const nvidia_driver::context* nvidia_driver::context_of_tokens(uint64_t p2p_token,
                                                               uint32_t va_space_token) const {
  auto it = m_tokens.find({p2p_token, va_space_token});
  return it == m_tokens.end() ? nullptr : find_context(it->second);
}

bool nvidia_driver::destroy_context(kernel::pid_t pid, int ctx) {
  auto it = m_contexts.find(ctx);
  if (it == m_contexts.end() || it->second.pid != pid) return false;
  process_state& ps = process(pid);
  std::vector<uint64_t> doomed;
  for (const auto& [va, a] : ps.allocations)
    if (a.ctx == ctx) doomed.push_back(va);
  for (uint64_t va : doomed) free_allocation(pid, va, "cuCtxDestroy");
  std::erase_if(ps.ipc_spans, [&](const auto& s) { return s.second.ctx == ctx; });
  release_blocks(ps, ctx);
  release_ipc_exports(ctx);
  forget_context(ctx);
  return true;
}

// A destroyed context leaves no trace: ids are never reused (m_next_ctx), so nothing needs
// its record to tell a stale id from a live one, and the driver's state stays O(live
// contexts) however many come and go.
void nvidia_driver::forget_context(int ctx) {
  auto it = m_contexts.find(ctx);
  if (it == m_contexts.end()) return;
  m_tokens.erase({it->second.p2p_token, it->second.va_space_token});
  m_contexts.erase(it);
}

void nvidia_driver::process_exit(kernel::pid_t pid) {
  kernel::as_process as(pid);
  process_state& ps = process(pid);
  std::vector<uint64_t> doomed;
  for (const auto& [va, a] : ps.allocations) doomed.push_back(va);
  for (uint64_t va : doomed) free_allocation(pid, va, "process exit");
  std::vector<int> contexts;
  for (const auto& [id, c] : m_contexts)
    if (c.pid == pid) contexts.push_back(id);
  for (int id : contexts) {
    release_ipc_exports(id);
    forget_context(id);
  }
  // Its VMM mappings go (revoking pins on them), then its handles.
  std::vector<std::pair<uint64_t, uint64_t>> mapped;
  for (const auto& [va, m] : ps.mappings) mapped.push_back({va, m.size});
  for (auto [va, size] : mapped) vmm_unmap(pid, va, size);
  std::vector<uint64_t> held;
  for (auto& [id, m] : m_vmm)
    if (m.handles.erase(pid)) held.push_back(id);
  for (uint64_t id : held) vmm_free_memory_if_unused(id);
  // Nothing of the process is left (its persistent pins hold frames, not its pages): a
  // process that exited costs nothing from here on.
  m_processes.erase(pid);
}

// ---- allocations ----

std::optional<uint64_t> nvidia_driver::mem_alloc(int ctx_id, uint64_t size) {
  const context* c = find_context(ctx_id);
  if (!c || size == 0 || size > uva_limit - uva_base) return std::nullopt;
  process_state& ps = process(c->pid);
  gpu_state& gs = m_gpus[c->gpu];
  // A page already in use can take more of this context's memory unless a pin holds it:
  // its free bytes are not handed out while pinned (docs/driver-model.md).
  auto usable = [&](uint64_t page) {
    auto it = ps.pages.find(page);
    return it == ps.pages.end() || (it->second.ctx == ctx_id && it->second.allocations > 0 &&
                                    !gs.frames.held(it->second.frame));
  };
  const bool small = size <= alloc_chunk_bytes;
  const uint64_t reserve = round_up(size, small ? alloc_granule_bytes : alloc_chunk_bytes);
  std::optional<uint64_t> va;
  uint64_t fresh_chunk = 0;  // a chunk made for this allocation, undone with it
  if (small) {
    for (auto& [base, ch] : ps.chunks)  // the lowest chunk with room first
      if (ch.ctx == ctx_id && (va = ch.free.take(reserve, alloc_granule_bytes, usable))) break;
    if (!va) {
      auto base = take_ctx_va(ps, ctx_id, alloc_chunk_bytes, usable);
      if (!base) return std::nullopt;
      chunk& ch = ps.chunks
                      .emplace(*base, chunk{ctx_id, va_space(*base, *base + alloc_chunk_bytes), 0,
                                            m_next_chunk_id++})
                      .first->second;
      fresh_chunk = *base;
      va = ch.free.take(reserve, alloc_granule_bytes, usable);
    }
    if (!va) {  // only when pins hold both ends of a fresh chunk, which cannot happen
      if (fresh_chunk) {
        ps.chunks.erase(fresh_chunk);
        give_back_va(ps, fresh_chunk, alloc_chunk_bytes, false);
      }
      return std::nullopt;
    }
    ps.chunks.at(round_down(*va)).used += reserve;
  } else {
    va = take_ctx_va(ps, ctx_id, reserve, usable, alloc_chunk_bytes, reserve >= large_alloc_bytes);
    if (!va) return std::nullopt;
  }
  const uint64_t first = *va / gpu_page_bytes, last = (*va + reserve - 1) / gpu_page_bytes;
  // Map every page the allocation touches that is not mapped yet; all or nothing.
  std::vector<uint64_t> fresh;
  for (uint64_t p = first; p <= last; ++p) {
    if (ps.pages.count(p)) continue;
    auto frame = gs.frames.take();
    if (!frame) {  // out of VRAM: undo
      for (uint64_t q : fresh) {
        gs.frames.unmap(ps.pages[q].frame);
        ps.pages.erase(q);
      }
      give_back_va(ps, *va, reserve, small);
      return std::nullopt;
    }
    ps.pages[p] = {ctx_id, c->gpu, *frame, 0, {}};
    fresh.push_back(p);
  }
  for (uint64_t p = first; p <= last; ++p) ++ps.pages[p].allocations;
  allocation a;
  a.va = *va;
  a.size = size;
  a.reserve = reserve;
  a.in_chunk = small;
  a.ctx = ctx_id;
  a.buffer_id = m_next_buffer_id++;
  ps.allocations[*va] = a;
  return va;
}

std::optional<uint64_t> nvidia_driver::take_ctx_va(process_state& ps, int ctx, uint64_t bytes,
                                                   const std::function<bool(uint64_t)>& usable,
                                                   uint64_t align, bool large) {
  bool first = true;
  for (auto& [base, b] : ps.blocks)
    if (b.ctx == ctx) {
      first &= b.large;
      if (b.large != large) continue;
      if (auto va = b.free.take(bytes, align, usable)) return va;
    }
  // Blocks come from the top of the range down (driver 580 put a later context's memory
  // below an earlier one's, and VA reserved without a context far below both).
  const uint64_t size = std::max(ctx_block_bytes, round_up(bytes, align));
  auto base = ps.va.take_highest(size, std::max(align, alloc_chunk_bytes));
  if (!base) return std::nullopt;
  block& b = ps.blocks.emplace(*base, block{ctx, size, va_space(*base, *base + size), large})
                 .first->second;
  if (first && !large && size > ctx_own_offset + ctx_own_bytes)
    b.free.take_at(*base + ctx_own_offset, ctx_own_bytes);
  return b.free.take(bytes, align, usable);
}

void nvidia_driver::release_blocks(process_state& ps, int ctx) {
  for (auto it = ps.blocks.begin(); it != ps.blocks.end();)
    if (it->second.ctx == ctx) {
      const uint64_t base = it->first, end = base + it->second.size;
      ps.va.give_back(base, it->second.size);
      // VA reserved in the context stays reserved: it is the process's, not the context's.
      for (auto r = ps.reservations.lower_bound(base); r != ps.reservations.end() && r->first < end;
           ++r)
        ps.va.take_at(r->first, r->second);
      it = ps.blocks.erase(it);
    } else {
      ++it;
    }
}

// A chunk left empty goes back to its context's block (whether the real driver keeps it for
// later allocations was not probed).
void nvidia_driver::give_back_va(process_state& ps, uint64_t va, uint64_t reserve, bool in_chunk) {
  if (!in_chunk) {
    auto it = std::prev(ps.blocks.upper_bound(va));
    it->second.free.give_back(va, reserve);
    return;
  }
  const uint64_t base = round_down(va);
  chunk& ch = ps.chunks.at(base);
  ch.free.give_back(va, reserve);
  ch.used -= reserve;
  if (ch.used == 0) {
    unmap_unused_pages(ps, base);
    ps.chunks.erase(base);
    give_back_va(ps, base, alloc_chunk_bytes, false);
  }
}

nvidia_driver::allocation* nvidia_driver::find_allocation(kernel::pid_t pid, uint64_t va) {
  auto pit = m_processes.find(pid);
  if (pit == m_processes.end()) return nullptr;
  auto& allocs = pit->second.allocations;
  auto it = allocs.upper_bound(va);
  if (it == allocs.begin()) return nullptr;
  --it;
  return va - it->second.va < it->second.size ? &it->second : nullptr;
}

std::optional<std::pair<int, uint64_t>> nvidia_driver::vram_of(kernel::pid_t pid,
                                                               uint64_t va) const {
  auto pit = m_processes.find(pid);
  if (pit == m_processes.end()) return std::nullopt;
  auto it = pit->second.pages.find(va / gpu_page_bytes);
  if (it == pit->second.pages.end()) return std::nullopt;
  return std::make_pair(it->second.gpu, it->second.frame * gpu_page_bytes + va % gpu_page_bytes);
}

bool nvidia_driver::mem_free(kernel::pid_t pid, uint64_t va) {
  auto pit = m_processes.find(pid);
  if (pit == m_processes.end() || !pit->second.allocations.count(va)) return false;
  if (pit->second.allocations.at(va).ipc_export) return false;  // cuIpcCloseMemHandle's
  free_allocation(pid, va, "cuMemFree");
  return true;
}

// The allocation goes first, so nothing can pin what it leaves; then every revocable pin on a
// page it leaves without memory gets its callback (guide 5.3); then the pages go. A page a
// neighbour still uses stays, with its pins.
void nvidia_driver::free_allocation(kernel::pid_t pid, uint64_t va, const std::string& why) {
  process_state& ps = process(pid);
  const allocation a = ps.allocations.at(va);
  ps.allocations.erase(va);
  const uint64_t first = a.va / gpu_page_bytes, last = (a.va + a.reserve - 1) / gpu_page_bytes;
  std::vector<uint64_t> emptied, doomed_pins;
  for (uint64_t q = first; q <= last; ++q) {
    va_page& page = ps.pages.at(q);
    if (--page.allocations > 0) continue;
    emptied.push_back(q);
    doomed_pins.insert(doomed_pins.end(), page.pins.begin(), page.pins.end());
  }
  std::sort(doomed_pins.begin(), doomed_pins.end());  // oldest pin first
  doomed_pins.erase(std::unique(doomed_pins.begin(), doomed_pins.end()), doomed_pins.end());
  for (uint64_t id : doomed_pins)
    revoke(id, fmt::format("{} of 0x{:x}", why, a.va));  // skips pins that went meanwhile
  for (uint64_t q : emptied) {
    const va_page& page = ps.pages.at(q);
    if (page.imported)
      m_gpus[page.gpu].frames.let_go(page.frame);  // the exporter's
    else
      m_gpus[page.gpu].frames.unmap(page.frame);  // stays in use while a persistent pin holds it
    ps.pages.erase(q);
  }
  if (!a.ipc_export) give_back_va(ps, a.va, a.reserve, a.in_chunk);  // an import's: its span's
}

}  // namespace p2psim::nv
