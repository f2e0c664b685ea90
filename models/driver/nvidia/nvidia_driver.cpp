#include "models/driver/nvidia/nvidia_driver.h"

#include <fmt/format.h>
#include <algorithm>

#include "models/driver/nvidia/pin.h"

namespace p2psim::nv {

namespace {
nvidia_driver* g_driver = nullptr;
uint64_t g_serial = 0;  // instances created so far
uint64_t round_up(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}
}  // namespace

nvidia_driver& nvidia_driver::instance() {
  if (!g_driver) throw std::logic_error("no NVIDIA driver model installed in this process");
  return *g_driver;
}
void nvidia_driver::install(nvidia_driver* d) {
  g_driver = d;
}

nvidia_driver::nvidia_driver(const driver_config& c)
    : m_config(c), m_serial(++g_serial), m_rng(c.seed) {}
nvidia_driver::~nvidia_driver() {
  if (g_driver == this) g_driver = nullptr;
}

int nvidia_driver::add_gpu(const gpu_resources& g) {
  if (!g.bar1 || !g.vram) throw std::invalid_argument("a GPU needs its BAR1 table and VRAM");
  gpu_state s;
  s.res = g;
  s.vram_used.assign(g.vram->capacity() / gpu_page_bytes, false);
  m_gpus.push_back(std::move(s));
  return int(m_gpus.size() - 1);
}

void nvidia_driver::note(const std::string& what, const std::string& detail) {
  m_events.push_back({what, detail});
}

int nvidia_driver::refuse(int err, const std::string& what, const std::string& detail) {
  ++m_counters.refused;
  note(what, detail);
  return -err;
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
  auto [it, fresh] = m_processes.try_emplace(pid);
  if (fresh) it->second.free_va[uva_base] = uva_limit - uva_base;
  return it->second;
}

// ---- contexts ----

int nvidia_driver::create_context(kernel::pid_t pid, int gpu) {
  if (gpu < 0 || gpu >= gpu_count()) return 0;
  context c;
  c.id = m_next_ctx++;
  c.pid = pid;
  c.gpu = gpu;
  c.p2p_token = m_rng();
  c.va_space_token = m_next_va_space++;
  m_contexts[c.id] = c;
  process(pid);
  return c.id;
}

const nvidia_driver::context* nvidia_driver::find_context(int ctx) const {
  auto it = m_contexts.find(ctx);
  return it == m_contexts.end() || !it->second.alive ? nullptr : &it->second;
}

bool nvidia_driver::destroy_context(kernel::pid_t pid, int ctx) {
  auto it = m_contexts.find(ctx);
  if (it == m_contexts.end() || !it->second.alive || it->second.pid != pid) return false;
  process_state& ps = process(pid);
  std::vector<uint64_t> doomed;
  for (const auto& [va, a] : ps.allocations)
    if (a.ctx == ctx) doomed.push_back(va);
  for (uint64_t va : doomed) free_allocation(pid, va, "cuCtxDestroy");
  it->second.alive = false;
  return true;
}

void nvidia_driver::process_exit(kernel::pid_t pid) {
  kernel::as_process as(pid);
  process_state& ps = process(pid);
  std::vector<uint64_t> doomed;
  for (const auto& [va, a] : ps.allocations) doomed.push_back(va);
  for (uint64_t va : doomed) free_allocation(pid, va, "process exit");
  for (auto& [id, c] : m_contexts)
    if (c.pid == pid) c.alive = false;
}

// ---- allocations ----

std::optional<uint64_t> nvidia_driver::take_vram_page(int gpu) {
  auto& used = m_gpus[gpu].vram_used;
  auto it = std::find(used.begin(), used.end(), false);
  if (it == used.end()) return std::nullopt;
  *it = true;
  return uint64_t(it - used.begin());
}

std::optional<uint64_t> nvidia_driver::take_va(process_state& ps, uint64_t size, uint64_t align) {
  for (auto it = ps.free_va.begin(); it != ps.free_va.end(); ++it) {
    uint64_t start = round_up(it->first, align), end = it->first + it->second;
    if (start + size > end) continue;
    uint64_t first = it->first, len = it->second;
    ps.free_va.erase(it);
    if (start > first) ps.free_va[first] = start - first;
    if (start + size < first + len) ps.free_va[start + size] = first + len - start - size;
    return start;
  }
  return std::nullopt;
}

std::optional<uint64_t> nvidia_driver::mem_alloc(int ctx_id, uint64_t size) {
  const context* c = find_context(ctx_id);
  if (!c || size == 0 || size > uva_limit - uva_base) return std::nullopt;
  process_state& ps = process(c->pid);
  // Small allocations are packed 256 B apart (cudaMalloc's alignment), so two of them can
  // share a 64 KiB GPU page and its BAR1 mapping (guide 5.2); large ones start on a page.
  const uint64_t align = size < gpu_page_bytes ? 256 : gpu_page_bytes;
  const uint64_t reserve = round_up(size, 256);
  // A GPU page belongs to one GPU: skip candidates whose edge pages another GPU backs.
  std::vector<std::pair<uint64_t, uint64_t>> skipped;
  std::optional<uint64_t> va;
  while ((va = take_va(ps, reserve, align))) {
    uint64_t first = *va / gpu_page_bytes, last = (*va + reserve - 1) / gpu_page_bytes;
    auto other_gpu = [&](uint64_t p) {
      auto it = ps.pages.find(p);
      return it != ps.pages.end() && it->second.gpu != c->gpu;
    };
    if (!other_gpu(first) && !other_gpu(last)) break;
    skipped.push_back({*va, reserve});
  }
  for (auto [s, n] : skipped) give_back_va(ps, s, n);
  if (!va) return std::nullopt;
  // Back every GPU page the allocation touches with VRAM.
  std::vector<uint64_t> fresh;
  for (uint64_t p = *va / gpu_page_bytes; p <= (*va + reserve - 1) / gpu_page_bytes; ++p) {
    auto it = ps.pages.find(p);
    if (it != ps.pages.end()) continue;
    auto vram = take_vram_page(c->gpu);
    if (!vram) {  // out of VRAM: undo
      for (uint64_t q : fresh) {
        m_gpus[c->gpu].vram_used[ps.pages[q].vram_page] = false;
        ps.pages.erase(q);
      }
      give_back_va(ps, *va, reserve);
      return std::nullopt;
    }
    ps.pages[p] = {c->gpu, *vram, 0, 0};
    fresh.push_back(p);
  }
  for (uint64_t p = *va / gpu_page_bytes; p <= (*va + reserve - 1) / gpu_page_bytes; ++p)
    ++ps.pages[p].allocations;
  allocation a;
  a.va = *va;
  a.size = size;
  a.ctx = ctx_id;
  a.buffer_id = m_next_buffer_id++;
  ps.allocations[*va] = a;
  return va;
}

nvidia_driver::allocation* nvidia_driver::find_allocation(kernel::pid_t pid, uint64_t va) {
  auto pit = m_processes.find(pid);
  if (pit == m_processes.end()) return nullptr;
  auto& allocs = pit->second.allocations;
  auto it = allocs.upper_bound(va);
  if (it == allocs.begin()) return nullptr;
  --it;
  return va < it->second.va + it->second.size ? &it->second : nullptr;
}

std::optional<std::pair<int, uint64_t>> nvidia_driver::vram_of(kernel::pid_t pid,
                                                               uint64_t va) const {
  auto pit = m_processes.find(pid);
  if (pit == m_processes.end()) return std::nullopt;
  auto it = pit->second.pages.find(va / gpu_page_bytes);
  if (it == pit->second.pages.end()) return std::nullopt;
  return std::make_pair(it->second.gpu,
                        it->second.vram_page * gpu_page_bytes + va % gpu_page_bytes);
}

bool nvidia_driver::mem_free(kernel::pid_t pid, uint64_t va) {
  process_state& ps = process(pid);
  if (!ps.allocations.count(va)) return false;
  free_allocation(pid, va, "cuMemFree");
  return true;
}

void nvidia_driver::release_va_page(process_state& ps, uint64_t p) {
  auto it = ps.pages.find(p);
  if (it == ps.pages.end() || it->second.allocations > 0 || it->second.pins > 0) return;
  m_gpus[it->second.gpu].vram_used[it->second.vram_page] = false;
  ps.pages.erase(it);
}

void nvidia_driver::free_allocation(kernel::pid_t pid, uint64_t va, const std::string& why) {
  process_state& ps = process(pid);
  const allocation a = ps.allocations.at(va);
  const uint64_t reserve = round_up(a.size, 256);
  const uint64_t first = a.va / gpu_page_bytes, last = (a.va + reserve - 1) / gpu_page_bytes;
  // Revoke every callback pin on these pages before the memory goes (guide 5.3): the
  // callback runs synchronously, the mapping is torn down after it returns.
  for (auto& p : m_pins) {
    if (p->st != pin::state::live || p->persistent || p->memory_pid != pid) continue;
    bool hit = false;
    for (uint64_t q = first; q <= last && !hit; ++q) hit = p->covers_page(q);
    if (hit) revoke(*p, why);
  }
  for (auto& p : m_pins)
    if (p->st == pin::state::live && p->persistent && p->memory_pid == pid)
      for (uint64_t q = first; q <= last; ++q)
        if (p->covers_page(q))
          note("persistent mapping outlives its memory",
               fmt::format("{} of 0x{:x}: the pages stay until nvidia_p2p_put_pages_persistent",
                           why, a.va));
  for (uint64_t q = first; q <= last; ++q) {
    --ps.pages[q].allocations;
    release_va_page(ps, q);
  }
  ps.allocations.erase(va);
  give_back_va(ps, a.va, reserve);
}

// Returns a VA range to the free list, merged with free neighbours, so that it is reused
// (guide 5.6's example: the next allocation may get the same address).
void nvidia_driver::give_back_va(process_state& ps, uint64_t start, uint64_t len) {
  auto next = ps.free_va.find(start + len);
  if (next != ps.free_va.end()) {
    len += next->second;
    ps.free_va.erase(next);
  }
  auto prev = ps.free_va.lower_bound(start);
  if (prev != ps.free_va.begin() && std::prev(prev)->first + std::prev(prev)->second == start) {
    --prev;
    prev->second += len;
  } else {
    ps.free_va[start] = len;
  }
}

}  // namespace p2psim::nv
