// The reference model's CUDA VMM, from docs/driver-model.md ("VMM") alone: memory held by
// handles and mappings, reserved VA, whole-handle mappings whose pages belong to no context,
// per-GPU access, and unmapping as freeing: the pages go dead, the pins on them get their
// callbacks, then the pages go.
#include <fmt/format.h>

#include <algorithm>

#include "tests/driver_ref/reference.h"

namespace p2psim::driver_ref {

std::string reference::learn_vmm_memory(int pid, int gpu, bool rdma,
                                        const std::vector<uint64_t>& frames, int& handle) {
  std::set<uint64_t> seen;
  for (uint64_t f : frames)
    if (f >= m_config.frames || frame_in_use(gpu, f) || !seen.insert(f).second)
      return fmt::format("cuMemCreate took frame {} of GPU {}, which is in use", f, gpu);
  ref_vmm_memory m;
  m.gpu = gpu;
  m.rdma = rdma;
  m.frames = frames;
  m.handles[pid] = 1;
  for (uint64_t f : frames) {
    m_frame_vmm[gpu][f] = 1;
    std::fill_n(m_vram[gpu].begin() + long(f * page_bytes), page_bytes, uint8_t(0));  // cleared
  }
  m_vmm_memory.push_back(m);
  m_vmm_handles.push_back({pid, int(m_vmm_memory.size() - 1), 1, 0});
  handle = int(m_vmm_handles.size() - 1);
  return "";
}

void reference::free_vmm_memory_if_unused(int i) {
  ref_vmm_memory& m = m_vmm_memory.at(i);
  if (!m.alive || !m.handles.empty() || m.mappings > 0) return;
  m.alive = false;
  for (uint64_t f : m.frames) m_frame_vmm[m.gpu][f] = 0;
}

bool reference::release_handle(int i) {
  ref_vmm_handle& h = m_vmm_handles.at(i);
  if (h.refs == 0) return false;
  if (--h.refs == 0 && h.mappings == 0) {  // the handle goes, and its hold on the memory
    ref_vmm_memory& m = m_vmm_memory.at(h.memory);
    if (m.handles.count(h.pid) && --m.handles[h.pid] == 0) m.handles.erase(h.pid);
    free_vmm_memory_if_unused(h.memory);
  }
  return true;
}

std::string reference::learn_reservation(int pid, uint64_t va, uint64_t size, uint64_t hint) {
  if (va % chunk_bytes) return fmt::format("reservation at 0x{:x} is not 2 MiB aligned", va);
  if (va < uva_begin || va >= uva_end || size > uva_end - va)
    return fmt::format("reservation 0x{:x}+0x{:x} is outside the UVA range", va, size);
  auto overlaps = [&](uint64_t at) {
    for (const auto& r : m_reservations)
      if (r.alive && r.pid == pid && at < r.va + r.size && r.va < at + size) return true;
    for (const auto& a : m_allocations)
      if (a.alive && a.pid == pid && at < a.va + a.reserve() && a.va < at + size) return true;
    return false;
  };
  if (overlaps(va)) return fmt::format("reservation 0x{:x}+0x{:x} overlaps live memory", va, size);
  if (hint && va == hint && overlaps(hint)) return "a taken hint was honoured";
  m_reservations.push_back({pid, va, size, true});
  return "";
}

bool reference::free_reservation(int pid, uint64_t va, uint64_t size) {
  for (auto& r : m_reservations)
    if (r.alive && r.pid == pid && r.va == va) {
      if (r.size != size) return false;
      for (const auto& m : m_vmm_mappings)
        if (m.alive && m.pid == pid && m.va < va + size && va < m.va + m.size) return false;
      r.alive = false;
      return true;
    }
  return false;
}

bool reference::map(int pid, uint64_t va, int hi) {
  const ref_vmm_handle& h = m_vmm_handles.at(hi);
  ref_vmm_memory& mem = m_vmm_memory.at(h.memory);
  const uint64_t count = mem.frames.size();
  for (uint64_t k = 0; k < count; ++k)
    if (page(pid, va / page_bytes + k)) return false;  // mapped already, or an allocation's
  auto& pages = m_pages[pid];
  for (uint64_t k = 0; k < count; ++k)
    pages[va / page_bytes + k] = {-1, mem.gpu, mem.frames[k], 1, h.memory};
  m_vmm_mappings.push_back({pid, hi, va, count * page_bytes, {}, true});
  ++m_vmm_handles[hi].mappings;
  ++mem.mappings;
  return true;
}

std::optional<std::vector<expected_callback>> reference::unmap(int pid, uint64_t va, uint64_t size,
                                                               int freeing_pid) {
  std::vector<std::pair<uint64_t, int>> going;
  for (size_t i = 0; i < m_vmm_mappings.size(); ++i) {
    const ref_vmm_mapping& m = m_vmm_mappings[i];
    if (!m.alive || m.pid != pid || m.va >= va + size || va >= m.va + m.size) continue;
    if (m.va < va || m.va + m.size > va + size) return std::nullopt;
    going.push_back({m.va, int(i)});
  }
  std::sort(going.begin(), going.end());
  auto& pages = m_pages[pid];
  std::vector<uint64_t> emptied;
  for (auto [at, i] : going) {
    m_vmm_mappings[i].alive = false;
    for (uint64_t n = at / page_bytes; n < (at + m_vmm_mappings[i].size) / page_bytes; ++n) {
      pages.at(n).allocations = 0;
      emptied.push_back(n);
    }
  }
  std::vector<expected_callback> out;
  revoke_all(doomed_pins(pid, emptied), freeing_pid, out);
  for (uint64_t n : emptied) pages.erase(n);
  for (auto [at, i] : going) {
    ref_vmm_handle& h = m_vmm_handles[m_vmm_mappings[i].handle];
    --h.mappings;
    --m_vmm_memory[h.memory].mappings;
    if (h.refs == 0 && h.mappings == 0) {
      ref_vmm_memory& mem = m_vmm_memory[h.memory];
      if (mem.handles.count(h.pid) && --mem.handles[h.pid] == 0) mem.handles.erase(h.pid);
    }
    free_vmm_memory_if_unused(h.memory);
  }
  return out;
}

std::vector<expected_callback> reference::unmap_all(int pid) {
  std::vector<std::pair<uint64_t, uint64_t>> mapped;
  for (const auto& m : m_vmm_mappings)
    if (m.alive && m.pid == pid) mapped.push_back({m.va, m.size});
  std::sort(mapped.begin(), mapped.end());
  std::vector<expected_callback> out;
  for (auto [va, size] : mapped) {
    auto cbs = unmap(pid, va, size, pid);
    out.insert(out.end(), cbs->begin(), cbs->end());
  }
  for (size_t i = 0; i < m_vmm_memory.size(); ++i)
    if (m_vmm_memory[i].handles.erase(pid)) free_vmm_memory_if_unused(int(i));
  for (auto& h : m_vmm_handles)
    if (h.pid == pid) h.refs = 0;  // gone with the process
  for (auto& r : m_reservations)
    if (r.pid == pid) r.alive = false;
  return out;
}

bool reference::vmm_accessible(int pid, int gpu, uint64_t va, uint64_t bytes, bool write) const {
  const unsigned need = write ? 3 : 1;
  for (uint64_t at = va; at < va + bytes;) {
    const ref_vmm_mapping* holder = nullptr;
    for (const auto& m : m_vmm_mappings)
      if (m.alive && m.pid == pid && at >= m.va && at < m.va + m.size) holder = &m;
    if (!holder) return false;
    auto it = holder->access.find(gpu);
    if (it == holder->access.end() || (it->second & need) != need) return false;
    at = holder->va + holder->size;
  }
  return true;
}

}  // namespace p2psim::driver_ref
