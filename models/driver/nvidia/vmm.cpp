// CUDA VMM in the driver: physical memory no context owns, VA a process reserves, and
// mappings of the one at the other (docs/driver-model.md, "VMM"). A mapping's pages are VA
// pages like an allocation's (context 0), so copies, vram_of and dma-buf exports find its
// frames; the frames are the memory's, taken at cuMemCreate and given back with it.
#include <fmt/format.h>
#include <algorithm>

#include "models/driver/nvidia/nvidia_driver.h"

namespace p2psim::nv {

namespace {
// Reservations this small, with an alignment this small, go in the current context's VA;
// driver 580 put 2 to 16 MiB ones (aligned up to 4 MiB) there, and a 64 MiB one, a 256 GiB one
// and a 1 GiB-aligned one far below every context's memory (h200_cuda13_vmm.txt). Where
// between 16 and 64 MiB the cut lies was not probed.
constexpr uint64_t ctx_reservation_limit = 64ull << 20;
}  // namespace

std::optional<uint64_t> nvidia_driver::vmm_create(kernel::pid_t pid, int gpu, uint64_t size,
                                                  bool rdma_capable) {
  if (gpu < 0 || gpu >= gpu_count() || size == 0 || size % gpu_page_bytes) return std::nullopt;
  vram_frames& frames = m_gpus[gpu].frames;
  vmm_memory m{gpu, rdma_capable, {}, {{pid, 1}}, 0};
  for (uint64_t i = 0; i < size / gpu_page_bytes; ++i) {
    auto f = frames.take();
    if (!f) {
      for (uint64_t taken : m.frames) frames.unmap(taken);
      return std::nullopt;
    }
    m.frames.push_back(*f);
  }
  // Handed out cleared: driver 580's new handles read as zeros where nothing was written
  // (h200_cuda13_vmm.txt), whatever the frames held before. (A creation that fails touches
  // no byte.)
  for (uint64_t f : m.frames) m_gpus[gpu].res.vram->fill(f * gpu_page_bytes, gpu_page_bytes, 0);
  m_vmm[m_next_vmm] = std::move(m);
  return m_next_vmm++;
}

void nvidia_driver::vmm_add_handle(uint64_t memory, kernel::pid_t pid) {
  ++m_vmm.at(memory).handles[pid];
}

void nvidia_driver::vmm_drop_handle(uint64_t memory, kernel::pid_t pid) {
  auto it = m_vmm.find(memory);
  if (it == m_vmm.end()) return;  // went with its process's exit
  auto h = it->second.handles.find(pid);
  if (h == it->second.handles.end()) return;
  if (--h->second == 0) it->second.handles.erase(h);
  vmm_free_memory_if_unused(memory);
}

std::vector<uint64_t> nvidia_driver::vmm_frames(uint64_t memory) const {
  auto it = m_vmm.find(memory);
  return it == m_vmm.end() ? std::vector<uint64_t>{} : it->second.frames;
}

void nvidia_driver::vmm_free_memory_if_unused(uint64_t memory) {
  auto it = m_vmm.find(memory);
  if (it == m_vmm.end() || !it->second.handles.empty() || it->second.mappings > 0) return;
  for (uint64_t f : it->second.frames) m_gpus[it->second.gpu].frames.unmap(f);
  m_vmm.erase(it);
}

std::optional<std::pair<int, uint64_t>> nvidia_driver::vmm_memory_of(uint64_t memory) const {
  auto it = m_vmm.find(memory);
  if (it == m_vmm.end()) return std::nullopt;
  return std::make_pair(it->second.gpu, uint64_t(it->second.frames.size()) * gpu_page_bytes);
}

std::optional<uint64_t> nvidia_driver::vmm_reserve(kernel::pid_t pid, int ctx, uint64_t size,
                                                   uint64_t align, uint64_t hint) {
  process_state& ps = process(pid);
  auto any = [](uint64_t) { return true; };  // reservations ignore mappings (driver 580)
  std::optional<uint64_t> va;
  if (ctx && find_context(ctx) && size < ctx_reservation_limit && align < ctx_reservation_limit) {
    if (hint)
      for (auto& [base, b] : ps.blocks)
        if (b.ctx == ctx && b.free.take_at(hint, size)) va = hint;
    if (!va) va = take_ctx_va(ps, ctx, size, any, align);
  } else {
    if (hint && ps.va.take_at(hint, size)) va = hint;
    if (!va) va = ps.va.take(size, align, any);  // the lowest: below every context's blocks
  }
  if (va) ps.reservations[*va] = size;
  return va;
}

bool nvidia_driver::vmm_free_reservation(kernel::pid_t pid, uint64_t va, uint64_t size) {
  auto pit = m_processes.find(pid);
  if (pit == m_processes.end()) return false;
  process_state& ps = pit->second;
  auto r = ps.reservations.find(va);
  if (r == ps.reservations.end() || r->second != size) return false;
  for (const auto& [at, m] : ps.mappings)
    if (at < va + size && va < at + m.size) return false;  // still mapped there
  ps.reservations.erase(r);
  auto b = ps.blocks.upper_bound(va);
  if (b != ps.blocks.begin() && va - std::prev(b)->first < std::prev(b)->second.size)
    std::prev(b)->second.free.give_back(va, size);
  else
    ps.va.give_back(va, size);
  return true;
}

std::optional<std::pair<uint64_t, uint64_t>> nvidia_driver::vmm_reservation_of(kernel::pid_t pid,
                                                                               uint64_t va) const {
  auto pit = m_processes.find(pid);
  if (pit == m_processes.end()) return std::nullopt;
  const auto& rs = pit->second.reservations;
  auto it = rs.upper_bound(va);
  if (it == rs.begin()) return std::nullopt;
  --it;
  if (va - it->first >= it->second) return std::nullopt;
  return *it;
}

bool nvidia_driver::vmm_map(kernel::pid_t pid, uint64_t va, uint64_t memory, uint64_t handle) {
  vmm_memory& m = m_vmm.at(memory);
  process_state& ps = process(pid);
  const uint64_t first = va / gpu_page_bytes, count = m.frames.size();
  for (uint64_t i = 0; i < count; ++i)
    if (ps.pages.count(first + i)) return false;  // mapped already, or an allocation's
  for (uint64_t i = 0; i < count; ++i) ps.pages[first + i] = {0, m.gpu, m.frames[i], 1, {}};
  ps.mappings[va] = {va, count * gpu_page_bytes, memory, handle, m_next_buffer_id++, {}};
  ++m.mappings;
  return true;
}

std::optional<std::vector<nvidia_driver::vmm_mapping>> nvidia_driver::vmm_unmap(kernel::pid_t pid,
                                                                                uint64_t va,
                                                                                uint64_t size) {
  std::vector<vmm_mapping> gone;
  auto pit = m_processes.find(pid);
  if (pit == m_processes.end()) return gone;
  process_state& ps = pit->second;
  auto it = ps.mappings.upper_bound(va);
  if (it != ps.mappings.begin() && std::prev(it)->first + std::prev(it)->second.size > va) --it;
  for (auto m = it; m != ps.mappings.end() && m->first < va + size; ++m)
    if (m->first < va || m->first + m->second.size > va + size) return std::nullopt;
  // The mappings go first, their pages with no memory left in them, so nothing can pin what
  // they leave (as cuMemFree); then the pins on those pages get their callbacks (oldest
  // first); then the pages go.
  while (it != ps.mappings.end() && it->first < va + size) {
    gone.push_back(it->second);
    it = ps.mappings.erase(it);
  }
  std::vector<uint64_t> doomed_pins;
  for (const vmm_mapping& m : gone)
    for (uint64_t q = m.va / gpu_page_bytes; q < (m.va + m.size) / gpu_page_bytes; ++q) {
      va_page& page = ps.pages.at(q);
      page.allocations = 0;
      doomed_pins.insert(doomed_pins.end(), page.pins.begin(), page.pins.end());
    }
  std::sort(doomed_pins.begin(), doomed_pins.end());
  doomed_pins.erase(std::unique(doomed_pins.begin(), doomed_pins.end()), doomed_pins.end());
  for (uint64_t id : doomed_pins) revoke(id, fmt::format("cuMemUnmap of 0x{:x}", va));
  for (const vmm_mapping& m : gone) {
    for (uint64_t q = m.va / gpu_page_bytes; q < (m.va + m.size) / gpu_page_bytes; ++q)
      ps.pages.erase(q);
    --m_vmm.at(m.memory).mappings;
    vmm_free_memory_if_unused(m.memory);
  }
  return gone;
}

uint64_t nvidia_driver::vmm_base(const process_state& ps, uint64_t page) {
  return std::prev(ps.mappings.upper_bound(page * gpu_page_bytes))->first;
}

nvidia_driver::vmm_mapping* nvidia_driver::vmm_mapping_at(kernel::pid_t pid, uint64_t va) {
  auto pit = m_processes.find(pid);
  if (pit == m_processes.end()) return nullptr;
  auto& ms = pit->second.mappings;
  auto it = ms.upper_bound(va);
  if (it == ms.begin()) return nullptr;
  --it;
  return va - it->first < it->second.size ? &it->second : nullptr;
}

std::vector<nvidia_driver::vmm_mapping*> nvidia_driver::vmm_mappings_over(kernel::pid_t pid,
                                                                          uint64_t va,
                                                                          uint64_t size) {
  std::vector<vmm_mapping*> over;
  for (uint64_t at = va; at < va + size;) {
    vmm_mapping* m = vmm_mapping_at(pid, at);
    if (!m) return {};
    over.push_back(m);
    at = m->va + m->size;
  }
  return over;
}

}  // namespace p2psim::nv
