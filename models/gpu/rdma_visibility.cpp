#include "models/gpu/rdma_visibility.h"

#include <algorithm>

namespace p2psim::gpu {

namespace {

// Bits [first, first + n) of a sector's byte mask.
uint32_t bytes_mask(uint64_t first, uint64_t n) {
  const uint64_t ones = n >= 32 ? 0xffff'ffffull : (1ull << n) - 1;
  return uint32_t(ones << first);
}

}  // namespace

rdma_visibility::rdma_visibility(memory::backing_store& vram, writes_ordering o,
                                 pcie::choice_source* choices)
    : m_vram(vram), m_ordering(o), m_choices(choices) {}

void rdma_visibility::landing(uint64_t offset, std::span<const uint8_t> data) {
  // The ordering attribute names the consumers that see RDMA writes in order by themselves.
  const bool covers = in_force(pcie::order_rule::gpu_writes_ordering);
  const bool owner_pending = m_ordering == writes_ordering::none || !covers;
  const bool peer_pending = m_ordering != writes_ordering::all_devices || !covers;
  if (!m_observed || !peer_pending || data.empty()) return;
  ++m_stats.landed_pending;
  record fresh;
  fresh.seen = {owner_pending ? sight::undecided : sight::visible, sight::undecided};
  for (uint64_t done = 0; done < data.size();) {
    const uint64_t at = offset + done;
    const uint64_t first = at % sector_bytes;
    const uint64_t n = std::min(sector_bytes - first, uint64_t(data.size()) - done);
    record r = fresh;
    r.mask = bytes_mask(first, n);
    m_vram.read(at, std::span<uint8_t>(r.before.data() + first, n));
    sector& s = m_sectors[at / sector_bytes];
    // Records undecided for the same consumers are decided together (decide() takes a whole
    // sector), so they behave as one: merging them keeps a sector that is written over and
    // over, and never read, at one record.
    if (!s.empty() && s.back().seen == r.seen) {
      record& last = s.back();
      for (uint64_t i = first; i < first + n; ++i)
        if (!(last.mask & (1u << i))) last.before[i] = r.before[i];
      last.mask |= r.mask;
    } else {
      s.push_back(r);
      ++m_pending;
    }
    done += n;
  }
}

void rdma_visibility::decide(sector& s, consumer c) {
  const size_t k = size_t(c);
  const sight now = m_choices && m_choices->pick(2) == 1 ? sight::hidden : sight::visible;
  for (record& r : s)
    if (r.seen[k] == sight::undecided) r.seen[k] = now;
}

void rdma_visibility::kernel_read(uint64_t offset, std::span<uint8_t> out, consumer c) {
  m_vram.read(offset, out);
  if (out.empty() || m_sectors.empty()) return;
  const size_t k = size_t(c);
  const uint64_t end = offset + out.size();
  bool stale = false;
  for (auto it = m_sectors.lower_bound(offset / sector_bytes);
       it != m_sectors.end() && it->first * sector_bytes < end;) {
    sector& s = it->second;
    const uint64_t base = it->first * sector_bytes;
    const uint64_t lo = std::max(offset, base) - base;
    const uint64_t hi = std::min(end, base + sector_bytes) - base;
    const uint32_t read = bytes_mask(lo, hi - lo);
    // Decided at the first read that touches a write's bytes, once for the whole sector: a
    // polling loop makes no new choices.
    if (std::any_of(s.begin(), s.end(), [&](const record& r) {
          return r.seen[k] == sight::undecided && (r.mask & read);
        }))
      decide(s, c);
    for (uint64_t i = lo; i < hi; ++i) {
      // The newest write c sees, else the oldest write's before-image. A record's own bytes
      // are the next newer record's before-image, or VRAM when it is the newest.
      const record* oldest = nullptr;
      bool seen = false, newest_seen = false;
      uint8_t seen_value = 0;
      for (const record& r : s) {
        if (!(r.mask & (1u << i))) continue;
        if (!oldest) oldest = &r;
        if (newest_seen) seen_value = r.before[i];
        newest_seen = r.seen[k] == sight::visible;
        seen |= newest_seen;
      }
      if (!oldest || newest_seen) continue;  // VRAM holds what c sees
      const uint8_t v = seen ? seen_value : oldest->before[i];
      uint8_t& o = out[base + i - offset];
      stale |= v != o;
      o = v;
    }
    it = settle(it);  // what was just decided visible everywhere is no longer pending
  }
  if (stale) ++m_stats.stale_reads;
}

void rdma_visibility::kernel_write(uint64_t offset, std::span<const uint8_t> data) {
  m_vram.write(offset, data);
  const uint64_t end = offset + data.size();
  for (auto it = m_sectors.lower_bound(offset / sector_bytes);
       it != m_sectors.end() && it->first * sector_bytes < end;) {
    const uint64_t base = it->first * sector_bytes;
    const uint64_t lo = std::max(offset, base) - base;
    const uint64_t hi = std::min(end, base + sector_bytes) - base;
    sector& s = it->second;
    for (record& r : s) r.mask &= ~bytes_mask(lo, hi - lo);
    it = settle(it);
  }
}

void rdma_visibility::cpu_sync() {
  ++m_stats.syncs;
  if (!in_force(pcie::order_rule::gpu_cpu_sync)) return;
  m_sectors.clear();
  m_pending = 0;
}

void rdma_visibility::flush(writes_ordering scope) {
  ++m_stats.flushes;
  if (scope == writes_ordering::none || !in_force(pcie::order_rule::gpu_flush)) return;
  for (auto it = m_sectors.begin(); it != m_sectors.end();) {
    for (record& r : it->second) {
      r.seen[size_t(consumer::owner)] = sight::visible;
      if (scope == writes_ordering::all_devices) r.seen[size_t(consumer::peer)] = sight::visible;
    }
    it = settle(it);
  }
}

rdma_visibility::sector_map::iterator rdma_visibility::settle(sector_map::iterator it) {
  sector& s = it->second;
  // Newest first: a record every consumer sees hides the older records' bytes under it, so
  // those bytes can no longer decide any read; then it is dropped itself.
  uint32_t shadow = 0;
  for (auto r = s.rbegin(); r != s.rend(); ++r) {
    const uint32_t mine = r->mask;
    r->mask &= ~shadow;
    if (r->seen[0] == sight::visible && r->seen[1] == sight::visible) {
      shadow |= mine;
      r->mask = 0;
    }
  }
  const size_t before = s.size();
  std::erase_if(s, [](const record& r) { return r.mask == 0; });
  m_pending -= before - s.size();
  return s.empty() ? m_sectors.erase(it) : std::next(it);
}

}  // namespace p2psim::gpu
