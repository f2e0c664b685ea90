#include "tests/driver_ref/harness.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

namespace p2psim::driver_ref {

namespace {

constexpr uint64_t arena_bytes = 1 << 20;  // each process's pageable memory

test::world_config world_of(const harness_config& c) {
  test::world_config w;
  w.gpus = c.ref.gpus;
  w.gpu.vram_bytes = c.ref.frames * page_bytes;
  w.gpu.bar1_bytes = c.ref.bar1_pages * page_bytes;
  w.gpu.bar1_reserved = c.ref.bar1_reserved * page_bytes;
  w.gpu.rdma_ordering = std::nullopt;  // peers write VRAM directly here
  w.driver.share_bar1 = c.ref.share_bar1;
  w.pid = 1;
  return w;
}

iommu::iommu_params translating() {
  iommu::iommu_params p;
  p.mode = iommu::iommu_mode::translating;
  return p;
}

uint8_t pattern(size_t step, uint64_t k) {
  return uint8_t(step * 131 + k * 7 + 1);
}

// An allocation's size from a command: small ones share 64 KiB pages, others straddle them.
uint64_t alloc_size(const command& c) {
  switch (c.variant % 4) {
    case 0:
      return 1 + c.b % 600;  // small: several per page
    case 1:
      return 1 + c.b % (2 * page_bytes);
    case 2: {
      static const int64_t edge[] = {-1, 0, 1, 256};
      return (1 + c.b % 4) * page_bytes + edge[c.c % 4];
    }
    default:
      return 1 + c.b % (16 * page_bytes);  // up to 1 MiB
  }
}

const CUpointer_attribute single_attributes[] = {
    CU_POINTER_ATTRIBUTE_BUFFER_ID,  CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
    CU_POINTER_ATTRIBUTE_P2P_TOKENS, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
    CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
    CU_POINTER_ATTRIBUTE_CONTEXT,    CU_POINTER_ATTRIBUTE_MEMORY_TYPE};

}  // namespace

harness::harness(const harness_config& c)
    : m_config(c),
      m_world(world_of(c)),
      m_ref(c.ref),
      m_iommu(translating()),
      m_nic0{"nic0", 0x0400, nullptr},
      m_nic1{"nic1", 0x0500, &m_iommu} {
  m_kmds.push_back(std::make_unique<peer::kmd>(&m_nic0, false));
  m_kmds.push_back(std::make_unique<peer::kmd>(&m_nic1, true));
  m_rdma = std::make_unique<peer::rdma_core>();
  m_nv_mem = std::make_unique<peer::nvidia_peermem>(*m_rdma, false);
  m_nv_mem_nc = std::make_unique<peer::nvidia_peermem>(*m_rdma, true);
  m_rdma->register_client(m_nv_mem.get());  // in the module's order
  m_rdma->register_client(m_nv_mem_nc.get());
  m_slots.resize(c.processes);
  for (auto& s : m_slots) new_process(s);
  for (int i = 0; i < c.ref.gpus; ++i)
    for (int j = 0; j < c.ref.gpus; ++j)
      m_world.driver().set_peer_reachable(i, j, peer_reachable(i, j));
}

harness::~harness() {
  for (const sut_mr& m : m_mrs)  // what is left goes as its process does
    if (m.alive) {
      kernel::as_process as(m.pid);
      m_rdma->dereg_mr(m.mr);
    }
  m_rdma.reset();
  for (auto& s : m_slots) s.cache.reset();
  m_kmds.clear();
}

void harness::new_process(process_slot& s) {
  s.pid = m_next_pid++;
  s.stack.clear();
  s.acquired.clear();
  s.cache = std::make_unique<peer::regcache>(*m_kmds[0], peer::regcache_params{});
  kernel::as_process as(s.pid);
  if (cuInit(0) != CUDA_SUCCESS) fail("cuInit failed");
  s.arena = static_cast<uint8_t*>(kernel::current_os().memory().allocate(s.pid, arena_bytes));
}

void harness::fail(const std::string& what) const {
  throw divergence(fmt::format("step {} ({}): {}", m_step, m_current, what));
}

void harness::expect(bool ok, const std::string& what) const {
  if (!ok) fail(what);
}

void harness::expect_eq(long long got, long long want, const std::string& what) const {
  if (got != want)
    fail(fmt::format("{}: the models gave {}, the reference says {}", what, got, want));
}

harness::process_slot& harness::slot(const command& c) {
  return m_slots[c.proc % m_slots.size()];
}

int harness::current(const process_slot& s) const {
  return !s.stack.empty() && m_ref.context(s.stack.back()).alive ? s.stack.back() : -1;
}

void harness::run_all(const std::vector<command>& cs) {
  // Every process starts with a context (on GPU 0, 1, 0...), so allocations can happen.
  for (size_t p = 0; p < m_slots.size(); ++p) {
    command c;
    c.what = op::ctx_create;
    c.proc = uint8_t(p);
    c.a = uint32_t(p);
    run(c);
  }
  for (const command& c : cs) run(c);
  check_all_vram();
}

void harness::run(const command& c) {
  ++m_step;
  m_current = describe(c);
  switch (c.what) {
    case op::ctx_create:
      ctx_create(c);
      break;
    case op::ctx_destroy:
      ctx_destroy(c);
      break;
    case op::ctx_peer_access:
      ctx_peer_access(c);
      break;
    case op::ctx_set_current:
      ctx_set_current(c);
      break;
    case op::mem_alloc:
      mem_alloc(c);
      break;
    case op::mem_free:
      mem_free(c);
      break;
    case op::process_exit:
      process_exit(c);
      break;
    case op::get_attribute:
      get_attribute(c);
      break;
    case op::get_attributes:
      get_attributes(c);
      break;
    case op::set_sync_memops:
      set_sync_memops(c);
      break;
    case op::memcpy_htod:
      memcpy_command(c, true);
      break;
    case op::memcpy_dtoh:
      memcpy_command(c, false);
      break;
    case op::get_pages:
      get_pages(c, false);
      break;
    case op::get_pages_persistent:
      get_pages(c, true);
      break;
    case op::put_pages:
      put_pages(c);
      break;
    case op::put_pages_persistent:
      put_pages_persistent(c);
      break;
    case op::free_page_table:
      free_page_table(c);
      break;
    case op::dma_map:
      dma_map(c);
      break;
    case op::dma_unmap:
      dma_unmap(c);
      break;
    case op::free_dma_mapping:
      free_dma_mapping(c);
      break;
    case op::peer_write:
      peer_access(c, true);
      break;
    case op::peer_read:
      peer_access(c, false);
      break;
    case op::kmd_pin:
      kmd_pin(c);
      break;
    case op::kmd_unpin:
      kmd_unpin(c);
      break;
    case op::regcache_acquire:
      regcache_acquire(c);
      break;
    case op::regcache_release:
      regcache_release(c);
      break;
    case op::host_memory:
      host_memory(c);
      break;
    case op::dma_buf_export:
      dma_buf_export(c);
      break;
    case op::dma_buf_close:
      dma_buf_close(c);
      break;
    case op::dma_buf_import:
      dma_buf_import(c);
      break;
    case op::vmm_create:
      vmm_create(c);
      break;
    case op::vmm_release:
      vmm_release(c);
      break;
    case op::vmm_reserve:
      vmm_reserve(c);
      break;
    case op::vmm_free:
      vmm_free(c);
      break;
    case op::vmm_map:
      vmm_map(c);
      break;
    case op::vmm_unmap:
      vmm_unmap(c);
      break;
    case op::vmm_access:
      vmm_access(c);
      break;
    case op::vmm_copy:
      vmm_copy(c);
      break;
    case op::vmm_get_pages:
      vmm_get_pages(c);
      break;
    case op::rdma_reg:
      rdma_reg(c);
      break;
    case op::rdma_dereg:
      rdma_dereg(c);
      break;
    case op::can_access_peer:
      can_access_peer(c);
      break;
    case op::peer_copy:
      peer_copy(c);
      break;
    case op::ipc_get:
      ipc_get(c);
      break;
    case op::ipc_open:
      ipc_open(c);
      break;
    case op::ipc_close:
      ipc_close(c);
      break;
    case op::ipc_copy:
      ipc_copy(c);
      break;
    case op::rdma_access:
      rdma_access(c);
      break;
    case op::count:
      break;
  }
  learn_pins();
  check_state();
}

// ---- contexts and processes ----

void harness::ctx_create(const command& c) {
  process_slot& s = slot(c);
  const int gpu = int(c.a % m_config.ref.gpus);
  kernel::as_process as(s.pid);
  CUcontext h = nullptr;
  expect_eq(cuCtxCreate(&h, 0, gpu), CUDA_SUCCESS, "cuCtxCreate");
  s.stack.push_back(m_ref.create_context(s.pid, gpu));  // pushed: current now
  m_contexts.push_back(h);
}

void harness::ctx_destroy(const command& c) {
  const int ctx = pick(c.a, m_contexts.size());
  if (ctx < 0) return;
  process_slot& s = slot(c);
  const ref_context& rc = m_ref.context(ctx);
  if (!rc.alive || rc.pid != s.pid) {
    kernel::as_process as(s.pid);
    expect_eq(cuCtxDestroy(m_contexts[ctx]), CUDA_ERROR_INVALID_CONTEXT,
              "cuCtxDestroy of a context the caller does not own");
    return;
  }
  auto script = m_ref.destroy_context(ctx);
  if (!s.stack.empty() && s.stack.back() == ctx) s.stack.pop_back();  // the one below is current
  with_script(script, s.pid, [&] { return cuCtxDestroy(m_contexts[ctx]); });
}

void harness::ctx_set_current(const command& c) {
  const int ctx = pick(c.a, m_contexts.size());
  if (ctx < 0) return;
  process_slot& s = slot(c);
  kernel::as_process as(s.pid);
  if (c.variant % 5 == 4) {  // NULL pops the stack
    expect_eq(cuCtxSetCurrent(nullptr), CUDA_SUCCESS, "cuCtxSetCurrent(NULL)");
    if (!s.stack.empty()) s.stack.pop_back();
    return;
  }
  const ref_context& rc = m_ref.context(ctx);
  const bool ok = rc.alive && rc.pid == s.pid;
  expect_eq(cuCtxSetCurrent(m_contexts[ctx]), ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT,
            "cuCtxSetCurrent");
  if (!ok) return;
  if (s.stack.empty())
    s.stack.push_back(ctx);
  else
    s.stack.back() = ctx;  // replaces the top
}

// Peer access (docs/driver-model.md, "Checked on real hardware": libcuda 580 on two H200s): the
// caller's current context and the peer must be live contexts of its own; access is one
// context's to another, never to a context on its own GPU or on a GPU it may not reach.
void harness::ctx_peer_access(const command& c) {
  process_slot& s = slot(c);
  // Mostly a live context of the caller's own, often on another GPU than the current one's
  // (any context is refused at once unless it is one of those).
  const int top = s.stack.empty() ? -1 : s.stack.back();
  std::vector<int> own, elsewhere;
  for (size_t i = 0; i < m_contexts.size(); ++i) {
    const ref_context& rc = m_ref.context(int(i));
    if (!rc.alive || rc.pid != s.pid) continue;
    own.push_back(int(i));
    if (top >= 0 && rc.gpu != m_ref.context(top).gpu) elsewhere.push_back(int(i));
  }
  // Or one it already has access to: disabling it, or enabling it twice.
  std::vector<int> granted;
  if (top >= 0) granted.assign(m_ref.context(top).peers.begin(), m_ref.context(top).peers.end());
  int peer = pick(c.a, m_contexts.size());
  if (c.b % 4 == 0 && !elsewhere.empty()) peer = elsewhere[c.a % elsewhere.size()];
  if (c.b % 4 == 1 && !own.empty()) peer = own[c.a % own.size()];
  if (c.b % 4 == 2 && !granted.empty()) peer = granted[c.a % granted.size()];
  if (peer < 0) return;
  kernel::as_process as(s.pid);
  const bool enable = c.variant % 2 == 0;
  const unsigned flags = c.variant % 6 == 4 ? 1 : 0;
  const int cur = s.stack.empty() ? -1 : s.stack.back();
  const ref_context& p = m_ref.context(peer);
  CUresult want = CUDA_SUCCESS;
  if (cur < 0 || !m_ref.context(cur).alive || !p.alive || p.pid != s.pid) {
    want = CUDA_ERROR_INVALID_CONTEXT;
  } else {
    std::set<int>& peers = m_ref.context(cur).peers;
    if (enable && flags)
      want = CUDA_ERROR_INVALID_VALUE;
    else if (enable && !peer_reachable(m_ref.context(cur).gpu, p.gpu))
      want = CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
    else if (enable)
      want = peers.insert(peer).second ? CUDA_SUCCESS : CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    else
      want = peers.erase(peer) ? CUDA_SUCCESS : CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  }
  const char* call = enable ? "cuCtxEnablePeerAccess" : "cuCtxDisablePeerAccess";
  const CUresult got = enable ? cuCtxEnablePeerAccess(m_contexts[peer], flags)
                              : cuCtxDisablePeerAccess(m_contexts[peer]);
  expect_eq(got, want, call);
  const char* name = nullptr;
  cuGetErrorName(got, &name);
  ++m_counts[fmt::format("{} {}", call, name ? name : "?")];
}

// Page-locked host memory, as libcuda 580 answers (docs/driver-model.md, "Checked on real
// hardware"): the allocating and registering calls and the flags query need a current
// context, unregistering and freeing need none, and a destroyed context still current is
// CONTEXT_IS_DESTROYED to all of them. Registrations are exact byte ranges of the process's
// memory that may not share a byte; a block or a registration ends with its context.
void harness::host_memory(const command& c) {
  process_slot& s = slot(c);
  kernel::as_process as(s.pid);
  auto& blocks = m_ref.host_blocks();
  const int top = s.stack.empty() ? -1 : s.stack.back();
  const bool dead = top >= 0 && !m_ref.context(top).alive;
  const CUresult context_needed = top < 0 ? CUDA_ERROR_INVALID_CONTEXT
                                  : dead  ? CUDA_ERROR_CONTEXT_IS_DESTROYED
                                          : CUDA_SUCCESS;
  // A pointer to aim at: a block's start or interior, the process's own or another's, or
  // arena memory no block holds.
  auto target = [&]() -> uint64_t {
    if (!blocks.empty() && c.b % 3 != 2) {
      const ref_host_block& b = blocks[c.a % blocks.size()];
      return b.start + (c.b % 3 == 1 && b.size > 1 ? 1 + c.c % (b.size - 1) : 0);
    }
    return uint64_t(reinterpret_cast<uintptr_t>(s.arena)) + c.c % arena_bytes;
  };
  auto holding = [&](uint64_t p) -> ref_host_block* {
    for (auto& b : blocks)
      if (b.pid == s.pid && b.holds(p)) return &b;
    return nullptr;
  };
  auto ptr = [](uint64_t p) { return reinterpret_cast<void*>(uintptr_t(p)); };
  switch (c.variant % 5) {
    case 0: {  // cuMemHostAlloc
      const uint64_t size = 1 + c.b % (3 << 20);
      const unsigned flags = c.c % 9;  // 8: invalid
      const CUresult want = context_needed ? context_needed
                            : flags > 7    ? CUDA_ERROR_INVALID_VALUE
                                           : CUDA_SUCCESS;
      void* p = nullptr;
      expect_eq(cuMemHostAlloc(&p, size, flags), want, "cuMemHostAlloc");
      if (want != CUDA_SUCCESS) break;
      const uint64_t start = uint64_t(reinterpret_cast<uintptr_t>(p));
      expect(start % 512 == 0, "cuMemHostAlloc: a block not on a 512-byte step");
      for (const auto& b : blocks)  // the model's placement must be a legal one
        expect(!b.alive || start + size <= b.start || b.start + b.size <= start,
               "cuMemHostAlloc: a block overlapping a live one");
      blocks.push_back({s.pid, top, start, size, flags, false, true});
      ++m_counts["cuMemHostAlloc CUDA_SUCCESS"];
      break;
    }
    case 1: {  // cuMemHostRegister: a range of the arena
      const uint64_t offset = c.b % arena_bytes;
      const uint64_t size = 1 + c.c % (arena_bytes - offset);
      const unsigned flags = (c.c >> 20) % 16;
      const uint64_t start = uint64_t(reinterpret_cast<uintptr_t>(s.arena)) + offset;
      CUresult want = context_needed;
      if (!want && (flags & ~0xBu)) want = CUDA_ERROR_INVALID_VALUE;  // IOMEMORY on memory too
      for (const auto& b : blocks)
        if (!want && b.alive && b.pid == s.pid && start < b.start + b.size &&
            b.start < start + size)
          want =
              b.registered ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED : CUDA_ERROR_INVALID_VALUE;
      expect_eq(cuMemHostRegister(ptr(start), size, flags), want, "cuMemHostRegister");
      if (want == CUDA_SUCCESS) blocks.push_back({s.pid, top, start, size, flags, true, true});
      ++m_counts[fmt::format("cuMemHostRegister {}", int(want))];
      break;
    }
    case 2: {  // cuMemHostUnregister
      const uint64_t p = target();
      ref_host_block* b = holding(p);
      const CUresult want = dead ? CUDA_ERROR_CONTEXT_IS_DESTROYED
                            : !b ? CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED
                            : !b->registered || b->start != p ? CUDA_ERROR_INVALID_VALUE
                                                              : CUDA_SUCCESS;
      expect_eq(cuMemHostUnregister(ptr(p)), want, "cuMemHostUnregister");
      if (want == CUDA_SUCCESS) b->alive = false;
      ++m_counts[fmt::format("cuMemHostUnregister {}", int(want))];
      break;
    }
    case 3: {  // cuMemFreeHost
      const uint64_t p = target();
      ref_host_block* b = holding(p);
      const CUresult want = dead                                   ? CUDA_ERROR_CONTEXT_IS_DESTROYED
                            : !b || b->registered || b->start != p ? CUDA_ERROR_INVALID_VALUE
                                                                   : CUDA_SUCCESS;
      expect_eq(cuMemFreeHost(ptr(p)), want, "cuMemFreeHost");
      if (want == CUDA_SUCCESS) b->alive = false;
      ++m_counts[fmt::format("cuMemFreeHost {}", int(want))];
      break;
    }
    default: {  // cuMemHostGetFlags: DEVICEMAP always, WRITECOMBINED of blocks, PORTABLE of
                // registrations
      const uint64_t p = target();
      const ref_host_block* b = holding(p);
      const CUresult want = context_needed ? context_needed
                            : b            ? CUDA_SUCCESS
                                           : CUDA_ERROR_INVALID_VALUE;
      unsigned got = 0;
      expect_eq(cuMemHostGetFlags(&got, ptr(p)), want, "cuMemHostGetFlags");
      if (want == CUDA_SUCCESS)
        expect_eq(got, 2u | (b->flags & (b->registered ? 1u : 4u)), "cuMemHostGetFlags' flags");
      break;
    }
  }
}

// Which GPU may reach which: the first two each other, any others nobody, so that refusals
// happen too.
bool harness::peer_reachable(int from, int to) {
  return from != to && from < 2 && to < 2;
}

void harness::process_exit(const command& c) {
  process_slot& s = slot(c);
  auto script = m_ref.process_exit(s.pid);
  with_script(script, s.pid, [&] {
    m_world.driver().process_exit(s.pid);
    m_world.os().dma_bufs().close_all(s.pid);  // its descriptors close with it
    return CUDA_SUCCESS;
  });
  new_process(s);
}

void harness::with_script(std::vector<expected_callback> script, int pid,
                          const std::function<CUresult()>& sut_call) {
  m_script = std::move(script);
  m_script_pos = 0;
  m_observed.clear();
  CUresult r;
  {
    kernel::as_process as(pid);
    r = sut_call();
  }
  expect_eq(r, CUDA_SUCCESS, "the freeing call");
  std::vector<expected_callback> mine;  // the kernel driver's callbacks are checked by region
  for (const auto& e : m_script)
    if (!m_ref.pin(e.pin).by_kmd) mine.push_back(e);
  std::string want, got;
  for (const auto& e : mine) want += fmt::format(" #{}->{}", e.pin, e.result);
  for (const auto& o : m_observed) got += fmt::format(" #{}->{}", o.pin, o.result);
  if (want != got)
    fail(
        fmt::format("free callbacks (pin->nested result): the models ran [{}], the reference "
                    "expects [{}] (5.3)",
                    got, want));
  m_script.clear();
  sync_regions(0);
  sync_regions(1);
  sync_mrs();
}

void harness::callback_trampoline(void* data) {
  auto* d = static_cast<callback_data*>(data);
  d->h->on_callback(d->pin);
}

void harness::on_callback(int pin) {
  while (m_script_pos < m_script.size() && m_ref.pin(m_script[m_script_pos].pin).by_kmd)
    ++m_script_pos;
  observed_callback o{pin, 0};
  if (m_script_pos >= m_script.size() || m_script[m_script_pos].pin != pin) {
    o.result = 999;  // not expected now: make no calls, the comparison reports it
    m_observed.push_back(o);
    return;
  }
  const expected_callback& e = m_script[m_script_pos++];
  ++m_counts["callbacks"];
  if (e.action != callback_action::free_table && e.action != callback_action::nothing)
    ++m_counts["callbacks calling back"];
  sut_pin& p = m_pins.at(pin);
  switch (e.action) {
    case callback_action::free_table:
      o.result = nvidia_p2p_free_page_table(p.table);
      break;
    case callback_action::nothing:
    case callback_action::count:
      break;
    case callback_action::put_self:
      o.result = nvidia_p2p_put_pages(0, 0, m_ref.pin(pin).va, p.table);
      break;
    case callback_action::get_pages_same:
    case callback_action::get_pages_other: {
      if (!e.length) break;
      nvidia_p2p_page_table_t* t = nullptr;
      m_callback_data.push_back({this, int(m_pins.size())});
      o.result = nvidia_p2p_get_pages(0, 0, e.va, e.length, &t, callback_trampoline,
                                      &m_callback_data.back());
      if (o.result == 0) record_pin(t);
      break;
    }
    case callback_action::put_other:
      if (e.target_pin >= 0)
        o.result =
            nvidia_p2p_put_pages(0, 0, m_ref.pin(e.target_pin).va, m_pins.at(e.target_pin).table);
      break;
  }
  m_observed.push_back(o);
}

int harness::record_pin(nvidia_p2p_page_table_t* t) {
  sut_pin p;
  p.table = t;
  for (uint32_t i = 0; i < t->entries; ++i) p.bus.push_back(t->pages[i]->physical_address);
  m_pins.push_back(p);
  return int(m_pins.size() - 1);
}

// ---- allocations ----

void harness::mem_alloc(const command& c) {
  process_slot& s = slot(c);
  const uint64_t size = alloc_size(c);
  kernel::as_process as(s.pid);
  CUdeviceptr p = 0;
  const CUresult r = cuMemAlloc(&p, size);
  const int ctx = current(s);
  if (ctx < 0) {
    expect_eq(r, CUDA_ERROR_INVALID_CONTEXT, "cuMemAlloc without a current context");
    return;
  }
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    expect(m_ref.may_run_out(ctx, size),
           fmt::format("cuMemAlloc({}) ran out of memory with {} frames free", size,
                       m_ref.frames_free(m_ref.context(ctx).gpu)));
    return;
  }
  expect_eq(r, CUDA_SUCCESS, fmt::format("cuMemAlloc({})", size));
  ++m_counts["allocations"];
  std::map<uint64_t, std::pair<int, uint64_t>> frames;
  ref_allocation probe;
  probe.va = p;
  probe.size = size;
  for (uint64_t n = probe.first_page(); n <= probe.last_page(); ++n)
    if (auto v = m_world.driver().vram_of(s.pid, n * page_bytes))
      frames[n] = {v->first, v->second / page_bytes};
  const std::string bad = m_ref.learn_allocation(ctx, p, size, frames);
  if (!bad.empty()) fail("cuMemAlloc: " + bad);
}

// Mostly one of the caller's own live allocations (what a program uses); a quarter of the
// time any allocation ever made: freed ones, other processes'.
int harness::pick_allocation(const command& c) const {
  std::vector<int> own;
  const int pid = m_slots[c.proc % m_slots.size()].pid;
  for (size_t i = 0; i < m_ref.allocations(); ++i)
    if (m_ref.allocation(int(i)).alive && m_ref.allocation(int(i)).pid == pid)
      own.push_back(int(i));
  if (own.empty() || (c.variant & 0xc0) == 0xc0) return pick(c.a, m_ref.allocations());
  return own[c.a % own.size()];
}

uint64_t harness::pointer_of(const command& c, int alloc, uint8_t kind) const {
  if (alloc < 0) return 0;
  const ref_allocation& a = m_ref.allocation(alloc);
  switch (kind % 12) {
    case 7:
      return a.va + c.c % a.size;  // interior
    case 8:
      return a.va + a.size;  // one past the end
    case 9:
      return 0;  // NULL
    case 10:
      return uint64_t(&m_config);  // host memory
    case 11:
      return a.va + a.size - 1;
    default:
      return a.va;
  }
}

void harness::mem_free(const command& c) {
  process_slot& s = slot(c);
  const int alloc = pick_allocation(c);
  const uint64_t ptr = pointer_of(c, alloc, c.variant);
  const int target = m_ref.allocation_at(s.pid, ptr);
  if (ptr == 0) {  // like free(NULL) (driver 580: tests/data/cuda_probe)
    kernel::as_process as(s.pid);
    expect_eq(cuMemFree(0), CUDA_SUCCESS, "cuMemFree(0)");
    return;
  }
  if (target < 0 || m_ref.allocation(target).va != ptr) {
    kernel::as_process as(s.pid);
    expect_eq(cuMemFree(ptr), CUDA_ERROR_INVALID_VALUE, "cuMemFree of no allocation's base");
    return;
  }
  auto script = m_ref.free_allocation(target, s.pid);
  with_script(script, s.pid, [&] { return cuMemFree(ptr); });
}

// The tokens a process would hand over: read by the context's process through P2P_TOKENS
// (which the reference checks as any read), or a guess when it has no live buffer to read.
std::pair<uint64_t, uint32_t> harness::tokens_for(int ctx) {
  const std::pair<uint64_t, uint32_t> guess{0x5eed'0000'0000'0001ull, 0x7777};
  if (ctx < 0) return guess;
  if (!m_ref.context(ctx).tokens) {
    for (size_t i = 0; i < m_ref.allocations(); ++i) {
      ref_allocation& a = m_ref.allocation(int(i));
      if (!a.alive || a.ctx != ctx) continue;
      CUDA_POINTER_ATTRIBUTE_P2P_TOKENS t{};
      kernel::as_process as(a.pid);
      expect_eq(cuPointerGetAttribute(&t, CU_POINTER_ATTRIBUTE_P2P_TOKENS, a.va), CUDA_SUCCESS,
                "P2P_TOKENS of a live buffer");
      const std::string bad = m_ref.learn_tokens(ctx, t.p2pToken, t.vaSpaceToken);
      if (!bad.empty()) fail(bad);
      a.sync_memops = true;
      break;
    }
  }
  return m_ref.context(ctx).tokens.value_or(guess);
}

void harness::get_attribute(const command& c) {
  process_slot& s = slot(c);
  const int alloc = pick_allocation(c);
  const uint64_t ptr = pointer_of(c, alloc, c.b);
  if (vmm_in(s.pid, ptr, 1) || imported_in(s.pid, ptr, 1)) return;  // real_driver_test.cpp's
  const CUpointer_attribute attr = single_attributes[c.variant % 8];
  const int target = m_ref.allocation_at(s.pid, ptr);
  kernel::as_process as(s.pid);
  union {
    unsigned long long u64;
    unsigned int u32;
    int i32;
    CUcontext ctx;
    CUDA_POINTER_ATTRIBUTE_P2P_TOKENS tokens;
  } v{};
  const CUresult r = cuPointerGetAttribute(&v, attr, ptr);
  const std::string what = fmt::format("cuPointerGetAttribute({})", int(attr));
  if (target < 0) {
    expect_eq(r, CUDA_ERROR_INVALID_VALUE, what + " of no live allocation of the caller (7.2)");
    return;
  }
  expect_eq(r, CUDA_SUCCESS, what);
  ref_allocation& a = m_ref.allocation(target);
  std::string bad;
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      bad = m_ref.learn_buffer_id(target, v.u64);
      break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
      expect_eq(v.u32, a.sync_memops, what);
      break;
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
      bad = m_ref.learn_tokens(a.ctx, v.tokens.p2pToken, v.tokens.vaSpaceToken);
      a.sync_memops = true;  // the legacy registration (5.7)
      break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      expect_eq(v.u64, a.va, what);
      break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      expect_eq(v.u64, a.size, what);
      break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      expect_eq(v.i32, m_ref.context(a.ctx).gpu, what);
      break;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      expect(v.ctx == m_contexts[a.ctx], what);
      break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      expect_eq(v.u32, CU_MEMORYTYPE_DEVICE, what);
      break;
    default:
      break;
  }
  if (!bad.empty()) fail(what + ": " + bad);
}

void harness::get_attributes(const command& c) {
  process_slot& s = slot(c);
  const int alloc = pick_allocation(c);
  const uint64_t ptr = pointer_of(c, alloc, c.b);
  if (vmm_in(s.pid, ptr, 1) || imported_in(s.pid, ptr, 1)) return;  // real_driver_test.cpp's
  const int target = m_ref.allocation_at(s.pid, ptr);
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_BUFFER_ID, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                                 CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  unsigned long long id = 7;
  unsigned int sync = 7;
  size_t size = 7;
  int ordinal = 7;
  void* data[] = {&id, &sync, &size, &ordinal};
  kernel::as_process as(s.pid);
  expect_eq(cuPointerGetAttributes(4, attrs, data, ptr), CUDA_SUCCESS, "cuPointerGetAttributes");
  if (target < 0) {  // NULL values; no range is written (driver 580: tests/data/cuda_probe)
    expect(id == 0 && sync == 0 && size == 7 && ordinal == CU_DEVICE_INVALID,
           "cuPointerGetAttributes of no allocation: defaults");
    return;
  }
  const ref_allocation& a = m_ref.allocation(target);
  const std::string bad = m_ref.learn_buffer_id(target, id);
  if (!bad.empty()) fail("cuPointerGetAttributes: " + bad);
  expect_eq(sync, m_ref.allocation(target).sync_memops, "cuPointerGetAttributes SYNC_MEMOPS");
  expect_eq(size, a.size, "cuPointerGetAttributes RANGE_SIZE");
  expect_eq(ordinal, m_ref.context(a.ctx).gpu, "cuPointerGetAttributes DEVICE_ORDINAL");
}

void harness::set_sync_memops(const command& c) {
  process_slot& s = slot(c);
  const int alloc = pick_allocation(c);
  const uint64_t ptr = pointer_of(c, alloc, c.variant);
  if (imported_in(s.pid, ptr, 1)) return;  // another process's memory opened here
  const int target = m_ref.allocation_at(s.pid, ptr);
  const unsigned int value = c.b & 1;
  kernel::as_process as(s.pid);
  const CUresult r = cuPointerSetAttribute(&value, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, ptr);
  expect_eq(r, target < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS, "cuPointerSetAttribute");
  if (target >= 0) m_ref.allocation(target).sync_memops = value;
}

void harness::memcpy_command(const command& c, bool to_device) {
  process_slot& s = slot(c);
  const int alloc = pick_allocation(c);
  if (alloc < 0) return;
  const ref_allocation& a = m_ref.allocation(alloc);
  const uint64_t ptr = a.va + c.b % (a.size + 8);
  const uint64_t bytes = 1 + c.c % 700;
  // Another process's VA: VMM memory here (vmm_copy), or memory opened by IPC (ipc_copy).
  if (vmm_in(s.pid, ptr, bytes) || imported_in(s.pid, ptr, bytes)) return;
  std::vector<uint8_t> host(bytes);
  for (uint64_t k = 0; k < bytes; ++k) host[k] = pattern(m_step, k);
  kernel::as_process as(s.pid);
  const CUresult r =
      to_device ? cuMemcpyHtoD(ptr, host.data(), bytes) : cuMemcpyDtoH(host.data(), ptr, bytes);
  const char* name = to_device ? "cuMemcpyHtoD" : "cuMemcpyDtoH";
  if (current(s) < 0) {
    expect_eq(r, CUDA_ERROR_INVALID_CONTEXT, fmt::format("{} without a current context", name));
    return;
  }
  if (m_ref.allocation_at(s.pid, ptr, bytes) < 0) {
    expect_eq(r, CUDA_ERROR_INVALID_VALUE, fmt::format("{} outside a live allocation", name));
    return;
  }
  expect_eq(r, CUDA_SUCCESS, name);
  copied(s.pid, ptr, host, to_device, name);
}

void harness::copied(int pid, uint64_t ptr, const std::vector<uint8_t>& host, bool to_device,
                     const char* name) {
  std::set<std::pair<int, uint64_t>> touched;
  for (uint64_t k = 0; k < host.size(); ++k) {
    const ref_page* p = m_ref.page(pid, (ptr + k) / page_bytes);
    const uint64_t at = p->frame * page_bytes + (ptr + k) % page_bytes;
    if (to_device) {
      m_ref.vram(p->gpu)[at] = host[k];
      touched.insert({p->gpu, p->frame});
    } else if (host[k] != m_ref.vram(p->gpu)[at]) {
      fail(fmt::format("{}: byte {} is 0x{:02x}, the reference has 0x{:02x}", name, k, host[k],
                       m_ref.vram(p->gpu)[at]));
    }
  }
  compare_frames(touched);
}

// ---- nv-p2p ----

void harness::get_pages(const command& c, bool persistent) {
  process_slot& s = slot(c);
  const int alloc = pick_allocation(c);
  reference::pin_request r;
  r.caller = s.pid;
  r.persistent = persistent;
  if (alloc >= 0) {
    const ref_allocation& a = m_ref.allocation(alloc);
    const uint64_t pages = (a.end() - 1) / page_bytes - a.va / page_bytes + 1;
    r.va = (a.va / page_bytes + (c.b % 5 == 4)) * page_bytes;
    r.length = (c.c % 4 == 3 ? pages + 1 : 1 + c.c % pages) * page_bytes;
    if (!persistent) {  // whose memory: the caller's, or the tokens' (5.6)
      const int ctx = a.ctx;
      const uint8_t t = c.variant % 6;
      if (t == 3) std::tie(r.p2p, r.va_space) = tokens_for(ctx);
      if (t == 4) std::tie(r.p2p, r.va_space) = tokens_for(pick(c.b, m_ref.contexts()));
      if (t == 5 && c.b % 4 == 0) std::tie(r.p2p, r.va_space) = tokens_for(-1);
    }
  } else {
    r.va = uva_begin;
    r.length = page_bytes;
  }
  switch ((c.variant / 6) % 24) {  // misuse, now and then
    case 1:
      r.table = false;
      break;
    case 2:
      r.callback = false;
      break;
    case 3:
      r.va += 4096;
      break;
    case 4:
      r.va = ~uint64_t(0) - page_bytes + 1;
      r.length = 2 * page_bytes;
      break;
    case 5:
      r.length = 0;
      break;
    case 6:
      r.flags = persistent ? 1 : 0;
      break;
    default:
      break;
  }
  const int want = m_ref.predict_get_pages(r);
  nvidia_p2p_page_table_t* t = nullptr;
  m_callback_data.push_back({this, int(m_pins.size())});
  int got;
  {
    kernel::as_process as(s.pid);
    got = persistent
              ? nvidia_p2p_get_pages_persistent(r.va, r.length, r.table ? &t : nullptr, r.flags)
              : nvidia_p2p_get_pages(r.p2p, r.va_space, r.va, r.length, r.table ? &t : nullptr,
                                     r.callback ? callback_trampoline : nullptr,
                                     &m_callback_data.back());
  }
  expect_eq(got, want,
            fmt::format("nvidia_p2p_get_pages{}(0x{:x}, 0x{:x})", persistent ? "_persistent" : "",
                        r.va, r.length));
  ++m_counts[got ? "get_pages refused" : "pins"];
  if (got) return;
  const int i = m_ref.get_pages(r, c.action, false);
  expect_eq(record_pin(t), i, "pin index");
  expect(NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE(t) && t->page_size == NVIDIA_P2P_PAGE_SIZE_64KB,
         "page table version and page size (7.3)");
}

void harness::learn_pins() {
  for (size_t i = 0; i < m_pins.size(); ++i) {
    const ref_pin& p = m_ref.pin(int(i));
    // A pin whose table nobody outside its maker saw (nvidia-peermem's probe) is not learned.
    if (!p.bar1_pages.empty() || p.frames.empty() || m_pins[i].bus.empty()) continue;
    const std::string bad =
        m_ref.learn_bar1_pages(int(i), m_pins[i].bus, m_world.gpu(p.gpu).bar1_bus_base);
    if (!bad.empty()) fail(fmt::format("pin #{}: {}", i, bad));
  }
}

void harness::put_pages(const command& c) {
  process_slot& s = slot(c);
  const int pin = own_pin(c.a);
  if (pin < 0) return;
  const ref_pin& p = m_ref.pin(pin);
  uint64_t va = p.va, p2p = 0;
  uint32_t vs = 0;
  nvidia_p2p_page_table_t* t = m_pins[pin].table;
  switch (c.variant % 6) {
    case 1:
      std::tie(p2p, vs) = tokens_for(p.ctx);
      break;
    case 2:
      std::tie(p2p, vs) = tokens_for(-1);
      break;
    case 3:
      va += page_bytes;
      break;
    case 4:
      t = nullptr;
      break;
    default:
      break;
  }
  m_ref.put_pages(s.pid, p2p, vs, t ? pin : -1);
  kernel::as_process as(s.pid);
  expect_eq(nvidia_p2p_put_pages(p2p, vs, va, t), 0, "nvidia_p2p_put_pages (R535: always 0)");
}

void harness::put_pages_persistent(const command& c) {
  process_slot& s = slot(c);
  const int pin = own_pin(c.a);
  if (pin < 0) return;
  const uint32_t flags = c.variant % 5 == 1 ? 1 : 0;
  nvidia_p2p_page_table_t* t = c.variant % 5 == 2 ? nullptr : m_pins[pin].table;
  const int want = m_ref.put_pages_persistent(t ? pin : -1, flags);
  kernel::as_process as(s.pid);
  expect_eq(nvidia_p2p_put_pages_persistent(m_ref.pin(pin).va, t, flags), want,
            "nvidia_p2p_put_pages_persistent");
}

void harness::free_page_table(const command& c) {
  const int pin = own_pin(c.a);
  if (pin < 0) return;
  kernel::as_process as(slot(c).pid);
  expect_eq(nvidia_p2p_free_page_table(m_pins[pin].table), 0,
            "nvidia_p2p_free_page_table (R535: a no-op)");
}

void harness::dma_map(const command& c) {
  const int pin = own_pin(c.a);
  if (pin < 0) return;
  const int peer = c.variant % 2;
  pci_dev* dev = peer ? &m_nic1 : &m_nic0;
  const bool null_peer = c.variant % 7 == 3;
  const int want = null_peer ? -EINVAL : m_ref.dma_map(pin, peer);
  nvidia_p2p_dma_mapping_t* m = nullptr;
  int got;
  {
    kernel::as_process as(slot(c).pid);
    got = nvidia_p2p_dma_map_pages(null_peer ? nullptr : dev, m_pins[pin].table, &m);
  }
  expect_eq(got, want < 0 ? want : 0, "nvidia_p2p_dma_map_pages");
  if (got) return;
  expect(NVIDIA_P2P_DMA_MAPPING_VERSION_COMPATIBLE(m) && m->pci_dev == dev &&
             m->entries == m_pins[pin].bus.size(),
         "the DMA mapping's version, device and entries (7.3)");
  std::vector<uint64_t> addresses(m->dma_addresses, m->dma_addresses + m->entries);
  for (size_t e = 0; e < addresses.size(); ++e) {
    const uint64_t bus = m_pins[pin].bus[e];
    if (!peer) {
      expect_eq(addresses[e], bus, "without an IOMMU the DMA address is the BAR1 address (5.4)");
    } else {
      auto tr = m_iommu.translate(addresses[e] + 5, true);
      expect(tr.ok && tr.address == bus + 5, "the IOVA leads to the BAR1 page (4.6)");
    }
  }
  m_ref.learn_mapping(want, addresses);
  m_mappings.push_back({m, dev, pin});
  expect_eq(int(m_mappings.size() - 1), want, "mapping index");
}

void harness::dma_unmap(const command& c) {
  const int m = pick(c.a, m_mappings.size());
  if (m < 0) return;
  const sut_mapping& sm = m_mappings[m];
  if (m_ref.pin(sm.pin).by_kmd) return;  // the kernel driver's own
  int table_pin = sm.pin;
  if (c.variant % 5 == 1) table_pin = own_pin(c.b);  // another table
  if (table_pin < 0) return;
  pci_dev* peer = c.variant % 5 == 2 ? (sm.peer == &m_nic0 ? &m_nic1 : &m_nic0) : sm.peer;
  const bool nulls = c.variant % 5 == 3;
  kernel::as_process as(slot(c).pid);
  if (nulls) {
    expect_eq(nvidia_p2p_dma_unmap_pages(nullptr, m_pins[table_pin].table, sm.mapping), -EINVAL,
              "nvidia_p2p_dma_unmap_pages(NULL peer)");
    return;
  }
  m_ref.dma_unmap(m, table_pin);
  expect_eq(nvidia_p2p_dma_unmap_pages(peer, m_pins[table_pin].table, sm.mapping), 0,
            "nvidia_p2p_dma_unmap_pages (R535: 0 when late)");
}

void harness::free_dma_mapping(const command& c) {
  const int m = pick(c.a, m_mappings.size());
  if (m < 0 || m_ref.pin(m_mappings[m].pin).by_kmd) return;
  kernel::as_process as(slot(c).pid);
  expect_eq(nvidia_p2p_free_dma_mapping(m_mappings[m].mapping), 0,
            "nvidia_p2p_free_dma_mapping (R535: a no-op)");
}

// The pins this test made itself: the kernel driver's page tables are not the test's to pass.
int harness::own_pin(uint32_t index) const {
  std::vector<int> own;
  for (size_t i = 0; i < m_pins.size(); ++i)
    if (!m_ref.pin(int(i)).by_kmd) own.push_back(int(i));
  return own.empty() ? -1 : own[index % own.size()];
}

// ---- the peer's view ----

std::optional<std::pair<int, uint64_t>> harness::sut_resolve(uint64_t a, pci_dev* peer) {
  if (peer && peer->iommu) {
    auto tr = peer->iommu->translate(a, true);
    if (!tr.ok) return std::nullopt;
    a = tr.address;
  }
  for (int g = 0; g < m_config.ref.gpus; ++g) {
    const uint64_t base = m_world.gpu(g).bar1_bus_base;
    if (a < base || a - base >= m_world.bar1(g).size()) continue;
    auto v = m_world.bar1(g).translate(a - base);
    if (!v) return std::nullopt;  // an unmapped BAR1 page: the GPU answers UR
    return std::make_pair(g, *v);
  }
  return std::nullopt;
}

std::optional<std::pair<int, uint64_t>> harness::ref_resolve(uint64_t a, int peer) const {
  if (peer == 1) {  // through the IOMMU: only a live mapping's IOVA leads anywhere
    std::optional<uint64_t> bus;
    for (size_t m = 0; m < m_ref.mappings() && !bus; ++m) {
      const ref_mapping& rm = m_ref.mapping(int(m));
      if (!rm.live || rm.peer != 1) continue;
      for (size_t e = 0; e < rm.addresses.size(); ++e)
        if (a >= rm.addresses[e] && a - rm.addresses[e] < page_bytes)
          bus = m_pins[rm.pin].bus[e] + (a - rm.addresses[e]);
    }
    for (const auto& [pin, iovas] : m_import_iovas)  // imported dma-bufs' maps, while they live
      for (size_t e = 0; e < iovas.size() && !bus && m_ref.pin(pin).st != pin_state::ended; ++e)
        if (a >= iovas[e] && a - iovas[e] < page_bytes) bus = m_pins[pin].bus[e] + (a - iovas[e]);
    if (!bus) return std::nullopt;
    a = *bus;
  }
  for (int g = 0; g < m_config.ref.gpus; ++g) {
    const uint64_t base = m_world.gpu(g).bar1_bus_base;
    if (a < base || a - base >= m_config.ref.bar1_pages * page_bytes) continue;
    auto f = m_ref.bar1_frame(g, (a - base) / page_bytes);
    if (!f) return std::nullopt;
    return std::make_pair(g, *f * page_bytes + a % page_bytes);
  }
  return std::nullopt;
}

void harness::peer_access(const command& c, bool write) {
  // The window: a pin's page table (the device programmed with physical addresses), a DMA
  // mapping's addresses, or a region of the peer's kernel driver.
  std::vector<uint64_t> window;
  int peer = 0;
  const int kind = c.variant % 3;
  if (kind == 0) {
    const int pin = pick(c.a, m_pins.size());
    if (pin < 0) return;
    window = m_pins[pin].bus;
  } else if (kind == 1 && c.b % 4 == 3 && !m_import_iovas.empty()) {
    // The IOVAs of an imported dma-buf's map, live or released since (a device that kept
    // them must reach nothing once the importer unmapped them).
    const auto& [pin, iovas] = m_import_iovas[c.a % m_import_iovas.size()];
    window = iovas;
    peer = 1;
    ++m_counts[m_ref.pin(pin).st == pin_state::ended ? "accesses through released imports"
                                                     : "accesses through imports' IOVAs"];
  } else if (kind == 1) {
    const int m = pick(c.a, m_mappings.size());
    if (m < 0) return;
    window = m_ref.mapping(m).addresses;
    peer = m_ref.mapping(m).peer;
  } else {
    const int r = pick(c.a, m_regions.size());
    if (r < 0 || !m_regions[r].alive) return;
    const sut_region& sr = m_regions[r];
    const peer::kmd& k = *m_kmds[sr.kmd];
    std::vector<peer::bus_segment> segs;
    const uint64_t off = c.b % sr.region->size, len = 1 + c.c % 512;
    const int got = k.dma_segments(*sr.region, sr.region->va + off,
                                   std::min(len, sr.region->size - off), 0, segs);
    const bool revoked = m_ref.pin(sr.pin).st == pin_state::ended;
    expect_eq(got, revoked ? -EINVAL : 0, "kmd::dma_segments of a revoked region");
    if (got) return;
    window.clear();  // the segments, page by page, as addresses the device puts on the bus
    peer = sr.kmd;
    for (const auto& s : segs)
      for (uint64_t k2 = 0; k2 < s.length; ++k2) window.push_back(s.bus_address + k2);
    // Byte-granular window: each entry one byte.
    std::set<std::pair<int, uint64_t>> touched;
    for (uint64_t k2 = 0; k2 < window.size(); ++k2) {
      auto sut = sut_resolve(window[k2], peer ? &m_nic1 : &m_nic0);
      auto ref = ref_resolve(window[k2], peer);
      expect(sut.has_value() == ref.has_value(),
             fmt::format("a region's byte at 0x{:x} reaches VRAM in one model only", window[k2]));
      if (!ref) continue;
      expect(*sut == *ref, "a region's byte lands in another frame");
      if (write) {
        const uint8_t v = pattern(m_step, k2);
        m_world.vram(sut->first).write(sut->second, {&v, 1});
        m_ref.vram(ref->first)[ref->second] = v;
        touched.insert({ref->first, ref->second / page_bytes});
      }
    }
    compare_frames(touched);
    return;
  }
  if (window.empty()) return;
  const uint64_t span = window.size() * page_bytes;
  const uint64_t off = c.b % span, len = std::min<uint64_t>(1 + c.c % 512, span - off);
  std::set<std::pair<int, uint64_t>> touched;
  pci_dev* dev = peer ? &m_nic1 : &m_nic0;
  for (uint64_t k = 0; k < len; ++k) {
    const uint64_t at = off + k;
    const uint64_t a = window[at / page_bytes] + at % page_bytes;
    auto sut = sut_resolve(a, dev);
    auto ref = ref_resolve(a, peer);
    if (sut) touched.insert({sut->first, sut->second / page_bytes});
    if (ref) touched.insert({ref->first, ref->second / page_bytes});
    ++m_counts[ref ? "peer bytes reaching VRAM" : "peer bytes refused"];
    if (write) {
      const uint8_t v = pattern(m_step, k);
      if (sut) m_world.vram(sut->first).write(sut->second, {&v, 1});
      if (ref) m_ref.vram(ref->first)[ref->second] = v;
    } else {
      expect(sut.has_value() == ref.has_value(),
             fmt::format("a peer read of 0x{:x}: {} in the models, {} in the reference", a,
                         sut ? "reaches VRAM" : "refused", ref ? "reaches VRAM" : "refused"));
      if (sut) {
        uint8_t got = 0;
        m_world.vram(sut->first).read(sut->second, {&got, 1});
        expect_eq(got, m_ref.vram(ref->first)[ref->second], "a byte a peer read");
      }
    }
  }
  compare_frames(touched);
}

void harness::compare_frames(const std::set<std::pair<int, uint64_t>>& frames) {
  std::vector<uint8_t> got(page_bytes);
  for (auto [g, f] : frames) {
    m_world.vram(g).read(f * page_bytes, got);
    const uint8_t* want = m_ref.vram(g).data() + f * page_bytes;
    if (std::memcmp(got.data(), want, page_bytes) == 0) continue;
    auto mm = std::mismatch(got.begin(), got.end(), want);
    if (mm.first != got.end())
      fail(
          fmt::format("GPU {} frame {} byte 0x{:x} is 0x{:02x}, the reference has 0x{:02x}: a "
                      "byte reached VRAM that no live mapping led to, or missed one that did",
                      g, f, mm.first - got.begin(), *mm.first, *mm.second));
  }
}

void harness::check_all_vram() {
  std::set<std::pair<int, uint64_t>> all;
  for (int g = 0; g < m_config.ref.gpus; ++g)
    for (uint64_t f = 0; f < m_config.ref.frames; ++f) all.insert({g, f});
  compare_frames(all);
}

// ---- the peer's kernel driver and registration cache ----

void harness::kmd_pin(const command& c) {
  process_slot& s = slot(c);
  const int alloc = pick_allocation(c);
  if (alloc < 0) return;
  const ref_allocation& a = m_ref.allocation(alloc);
  const int k = c.variant % 2;
  uint64_t address = a.va + c.b % a.size, size = c.c % (a.size + page_bytes);
  if (c.variant % 7 == 5) address = ~uint64_t(0) - 100, size = 200;  // wraps around 2^64
  int want;
  reference::pin_request r;
  r.caller = s.pid;
  if (!size || size > ~uint64_t(0) - address || address + size > ~uint64_t(0) - page_bytes + 1) {
    want = -EINVAL;
  } else {
    r.va = address / page_bytes * page_bytes;
    r.length = (address + size - r.va + page_bytes - 1) / page_bytes * page_bytes;
    want = m_ref.predict_get_pages(r);
  }
  peer::kmd_region* region = nullptr;
  int got;
  {
    kernel::as_process as(s.pid);
    got = m_kmds[k]->pin(address, size, &region);
  }
  expect_eq(got, want, fmt::format("kmd pin of 0x{:x}+0x{:x}", address, size));
  sync_regions(k);
}

void harness::kmd_unpin(const command& c) {
  process_slot& s = slot(c);
  const int i = pick(c.a, m_regions.size());
  if (i < 0 || !m_regions[i].alive) return;
  sut_region& r = m_regions[i];
  const bool revoked = m_ref.pin(r.pin).st == pin_state::ended;
  const int want = revoked || r.pid != s.pid ? -EINVAL : 0;
  int got;
  {
    kernel::as_process as(s.pid);
    got = m_kmds[r.kmd]->unpin(r.region);
  }
  expect_eq(got, want, r.dma_buf_export >= 0 ? "kmd release of an imported dma-buf" : "kmd unpin");
  if (got == 0 && r.dma_buf_export >= 0) {  // unmap, detach, put: the map's BAR1 pages go
    r.alive = false;
    m_ref.release_import(r.pin, r.dma_buf_export);
    ++m_counts["dma-buf imports released"];
  }
  sync_regions(r.kmd);
}

void harness::regcache_acquire(const command& c) {
  process_slot& s = slot(c);
  const int alloc = pick_allocation(c);
  if (alloc < 0) return;
  const ref_allocation& a = m_ref.allocation(alloc);
  const uint64_t address = a.va + c.b % a.size, size = 1 + c.c % (a.size + 64);
  if (vmm_in(s.pid, address, size) || imported_in(s.pid, address, size))
    return;  // the cache on VMM memory: vmm_steps.yaml; on imported memory: ipc_steps.yaml
  peer::kmd_region* region = nullptr;
  int got;
  {
    kernel::as_process as(s.pid);
    got = s.cache->acquire(address, size, &region);
  }
  sync_regions(0);
  const int holder = m_ref.allocation_at(s.pid, address, size);
  if (got == -EINVAL) {
    expect(holder < 0, "the registration cache refused memory of one live allocation");
    return;
  }
  expect(holder >= 0,
         fmt::format("the registration cache gave {} for memory of no allocation", got));
  if (got == -ENOMEM) {
    const ref_allocation& h = m_ref.allocation(holder);
    reference::pin_request r;
    r.caller = s.pid;
    r.va = h.va / page_bytes * page_bytes;
    r.length = (h.end() - r.va + page_bytes - 1) / page_bytes * page_bytes;
    expect_eq(m_ref.predict_get_pages(r), -ENOMEM,
              "the registration cache gave -ENOMEM where the pin fits");
    return;
  }
  expect_eq(got, 0, "regcache acquire");
  ++m_counts["registration cache acquires"];
  // What it hands out must be live and map the caller's memory there now (6.5).
  auto it = std::find_if(m_regions.begin(), m_regions.end(),
                         [&](const sut_region& r) { return r.alive && r.region == region; });
  expect(it != m_regions.end(), "the registration cache handed out an unknown region");
  const ref_pin& p = m_ref.pin(it->pin);
  expect(p.st == pin_state::live, "the registration cache served a revoked region (6.5)");
  expect(p.memory_pid == s.pid && address >= p.va && address + size <= p.va + p.length,
         "the registration cache served a region that does not cover the request");
  for (uint64_t n = address / page_bytes; n <= (address + size - 1) / page_bytes; ++n) {
    const ref_page* pg = m_ref.page(s.pid, n);
    expect(pg && pg->frame == p.frames[n - p.va / page_bytes],
           "the registration cache served a region of memory that was freed since (6.5)");
  }
  s.acquired.push_back(int(it - m_regions.begin()));
}

void harness::regcache_release(const command& c) {
  process_slot& s = slot(c);
  if (s.acquired.empty()) return;
  const size_t i = c.a % s.acquired.size();
  sut_region& r = m_regions[s.acquired[i]];
  s.acquired.erase(s.acquired.begin() + long(i));
  if (!r.alive) return;  // unpinned meanwhile (another process's cache cannot, its own did)
  kernel::as_process as(s.pid);
  s.cache->release(r.region);
  sync_regions(0);
}

// The kernel driver's regions against the reference: new ones are pins it made (which the
// reference must allow), vanished ones were unpinned (which must release their pin).
void harness::sync_regions(int k) {
  std::set<std::pair<peer::kmd_region*, nvidia_p2p_page_table_t*>> now;
  for (const auto& r : m_kmds[k]->regions()) now.insert({r.get(), r->page_table});
  for (sut_region& r : m_regions) {
    if (!r.alive || r.kmd != k || now.count({r.region, r.table})) continue;
    r.alive = false;
    if (m_ref.pin(r.pin).st == pin_state::ended) continue;  // revoked, now forgotten
    if (r.mapping >= 0) m_ref.dma_unmap(r.mapping, r.pin);
    expect(m_ref.put_pages(r.pid, 0, 0, r.pin),
           "the kernel driver forgot a region whose pin the NVIDIA driver would not release");
  }
  for (const auto& entry : now) {
    peer::kmd_region* const region = entry.first;  // (clang 14 cannot capture bindings)
    nvidia_p2p_page_table_t* const table = entry.second;
    if (std::any_of(m_regions.begin(), m_regions.end(), [&](const sut_region& r) {
          return r.alive && r.region == region && r.table == table;
        }))
      continue;
    sut_region r;
    r.region = region;
    r.table = table;
    r.kmd = k;
    r.pid = region->pid;
    reference::pin_request q;
    q.caller = region->pid;
    q.va = region->va;
    q.length = region->size;
    expect_eq(m_ref.predict_get_pages(q), 0, "a pin the kernel driver made");
    ++m_counts["kernel driver pins"];
    r.pin = m_ref.get_pages(q, callback_action::free_table, true);
    expect_eq(record_pin(table), r.pin, "pin index");
    if (region->dma_mapping) {
      r.mapping = m_ref.dma_map(r.pin, 1);
      const auto* m = region->dma_mapping;
      m_ref.learn_mapping(r.mapping, {m->dma_addresses, m->dma_addresses + m->entries});
      m_mappings.push_back({region->dma_mapping, &m_nic1, r.pin});
    }
    m_regions.push_back(r);
  }
  // A region whose pin was revoked knows it (the kernel driver's callback ran: 6.4).
  for (const sut_region& r : m_regions)
    if (r.alive && r.kmd == k)
      expect(r.region->invalidated == (m_ref.pin(r.pin).st == pin_state::ended),
             "a region's invalidated flag disagrees with its pin's life");
}

// ---- state after every step ----

// ---- dma-buf export ----

void harness::dma_buf_export(const command& c) {
  process_slot& s = slot(c);
  const int alloc = pick_allocation(c);
  if (alloc < 0) return;
  const ref_allocation& a = m_ref.allocation(alloc);  // live or freed
  constexpr uint64_t cpu_page = 4096;
  const uint64_t start = a.va / cpu_page * cpu_page;
  const uint64_t whole = (a.va + a.size - start + cpu_page - 1) / cpu_page * cpu_page;
  uint64_t va = start, size = whole, flags = 0;
  switch (c.variant % 6) {
    case 1:  // a part, in whole CPU pages
      va = start + (c.b % (whole / cpu_page)) * cpu_page;
      size = (1 + c.c % ((start + whole - va) / cpu_page)) * cpu_page;
      break;
    case 2:
      va = start + 100;
      break;
    case 3:
      size = 0;
      break;
    case 4:
      flags = 1;  // MAPPING_TYPE_PCIE
      break;
    case 5:
      flags = 2;
      break;
  }
  if (m_ref.export_undecided(s.pid, va, size)) return;
  using result = reference::export_result;
  const result want = m_ref.predict_export(s.pid, current(s) >= 0, va, size, flags);
  const CUresult want_code = want == result::success           ? CUDA_SUCCESS
                             : want == result::invalid_context ? CUDA_ERROR_INVALID_CONTEXT
                             : want == result::not_supported   ? CUDA_ERROR_NOT_SUPPORTED
                                                               : CUDA_ERROR_INVALID_VALUE;
  int fd = -77;
  CUresult got;
  {
    kernel::as_process as(s.pid);
    got = cuMemGetHandleForAddressRange(&fd, va, size, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, flags);
  }
  expect_eq(
      got, want_code,
      fmt::format("cuMemGetHandleForAddressRange(0x{:x}, 0x{:x}, flags {})", va, size, flags));
  ++m_counts[got == CUDA_SUCCESS ? "dma-buf exports" : "dma-buf exports refused"];
  if (got != CUDA_SUCCESS) return;
  const int e = m_ref.export_range(s.pid, va, size);
  m_descriptors.resize(e + 1, -1);
  m_descriptors[e] = fd;
}

void harness::dma_buf_close(const command& c) {
  const int e = pick(c.a, m_ref.exports());
  if (e < 0) return;
  const ref_export& x = m_ref.exported(e);
  // The owner's process, or another one: descriptors are numbers in a process's own table.
  int pid = x.pid;
  if (c.variant % 2)
    for (const auto& s : m_slots)
      if (s.pid != x.pid) pid = s.pid;
  // The number means the descriptor of that number in the closing process, if it has one.
  const int fd = m_descriptors.at(e);
  int closes = -1;
  for (size_t j = 0; j < m_ref.exports(); ++j)
    if (m_ref.exported(int(j)).pid == pid && m_ref.exported(int(j)).open && m_descriptors[j] == fd)
      closes = int(j);
  int got;
  {
    kernel::as_process as(pid);
    got = m_world.os().dma_bufs().close(pid, fd);
  }
  expect_eq(got, closes >= 0 ? 0 : -EBADF, "close of a dma-buf descriptor");
  if (closes >= 0) {
    m_ref.close_export(closes);
    ++m_counts[closes == e ? "dma-buf descriptors closed" : "another process's number closed"];
  }
}

void harness::check_state() {
  size_t live = 0;
  for (size_t i = 0; i < m_ref.pins(); ++i)  // nv-p2p's: not the maps of imported dma-bufs
    live += m_ref.pin(int(i)).st != pin_state::ended && !m_ref.pin(int(i)).dma_buf;
  expect_eq(m_world.driver().live_pins(), live, "live pins");
  for (int g = 0; g < m_config.ref.gpus; ++g) {
    expect_eq(m_world.bar1(g).mapped_pages(), m_ref.bar1_in_use(g),
              fmt::format("BAR1 pages mapped on GPU {}", g));
    // What cuMemGetInfo counts as taken: frames mapped, pinned or held by a dma-buf.
    expect_eq(m_world.driver().vram_used_bytes(g),
              (m_config.ref.frames - m_ref.frames_free(g)) * page_bytes,
              fmt::format("VRAM in use on GPU {}", g));
    for (size_t i = 0; i < m_ref.pins(); ++i) {
      const ref_pin& p = m_ref.pin(int(i));
      if (p.st == pin_state::ended || p.gpu != g) continue;
      for (size_t e = 0; e < p.bar1_pages.size(); ++e) {
        auto v = m_world.bar1(g).translate(p.bar1_pages[e] * page_bytes);
        expect(
            v && *v == p.frames[e] * page_bytes,
            fmt::format("pin #{}'s BAR1 page {} does not lead to its frame", i, p.bar1_pages[e]));
      }
    }
  }
}

}  // namespace p2psim::driver_ref
