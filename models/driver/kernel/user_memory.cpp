#include "models/driver/kernel/user_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <utility>

namespace p2psim::kernel {

namespace {
uint64_t page_up(uint64_t n) {
  return (n + page_bytes - 1) / page_bytes * page_bytes;
}
uint64_t address(const void* p) {
  return uint64_t(reinterpret_cast<uintptr_t>(p));
}
}  // namespace

user_memory::~user_memory() {
  while (!m_blocks.empty()) release(m_blocks.begin());
  for (const auto& [start, bytes] : m_gone)
    munmap(reinterpret_cast<void*>(uintptr_t(start)), bytes);
}

void user_memory::set_physical(physical_memory* m) {
  if (!m_blocks.empty()) throw std::logic_error("user_memory: physical memory set after use");
  m_physical = m;
}

void* user_memory::allocate(pid_t pid, uint64_t bytes, int node) {
  if (bytes == 0) return nullptr;
  block b;
  b.pid = pid;
  b.bytes = page_up(bytes);
  b.node = node;
  b.pins.assign(b.bytes / page_bytes, 0);
  if (m_physical) {
    if (node < 0 || node >= m_physical->nodes()) return nullptr;
    auto bus = m_physical->allocate(node, b.bytes);
    if (!bus) return nullptr;
    // Address space only: the bytes are the frames', reached through read() and write().
    void* va =
        map_next(b.bytes + page_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE);
    if (va == MAP_FAILED) {
      m_physical->free(*bus, b.bytes);
      return nullptr;
    }
    b.start = address(va);
    b.bus = *bus;
    // Frames a freed block gave back hold its bytes: a new block starts zeroed, as the
    // kernel's fresh pages do.
    std::vector<uint8_t> zeros(std::min<uint64_t>(b.bytes, 1 << 20), 0);
    for (uint64_t done = 0; done < b.bytes; done += zeros.size())
      m_physical->write(b.bus + done,
                        {zeros.data(), std::min<uint64_t>(zeros.size(), b.bytes - done)});
  } else {
    // Mapped pages of its own, as the kernel's: once freed, they are gone (a read through
    // the pointer is EFAULT to a system call, SIGSEGV to a load), never another block's.
    // Each block is followed by a guard page: no block ends where another starts.
    void* p = map_next(b.bytes + page_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
    if (p == MAP_FAILED) return nullptr;
    mprotect(static_cast<uint8_t*>(p) + b.bytes, page_bytes, PROT_NONE);
    b.start = b.bus = address(p);
  }
  const uint64_t start = b.start;
  m_blocks.emplace(start, std::move(b));
  return reinterpret_cast<void*>(uintptr_t(start));
}

void* user_memory::map_next(uint64_t bytes, int prot, int flags) {
  constexpr uint64_t step = 1ull << 30;  // past a range someone else holds
  for (int tries = 0; tries < 16; ++tries) {
    void* want = reinterpret_cast<void*>(uintptr_t(m_next));
    void* p = mmap(want, bytes, prot, flags | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == want) {
      m_next += (bytes + 0xffff) & ~uint64_t(0xffff);  // the next one 64 KiB-aligned
      return p;
    }
    if (p != MAP_FAILED) munmap(p, bytes);  // a kernel before 4.17 took the address as a hint
    m_next += step;
  }
  return mmap(nullptr, bytes, prot, flags, -1, 0);
}

// The block's frames or pages go back, but not its addresses: they stay reserved, inaccessible
// (PROT_NONE), so that no later allocation of anyone's (the simulator's own heap included)
// lands there and a late access is recognised as one (check_not_gone).
void user_memory::release(std::map<uint64_t, block>::iterator it) {
  block& b = it->second;
  if (m_physical) m_physical->free(b.bus, b.bytes);
  void* va = reinterpret_cast<void*>(uintptr_t(b.start));
  mprotect(va, b.bytes, PROT_NONE);
  madvise(va, b.bytes, MADV_DONTNEED);
  m_gone[b.start] = b.bytes + page_bytes;
  m_blocks.erase(it);
}

bool user_memory::free(pid_t pid, const void* p) {
  auto it = m_blocks.find(address(p));
  if (it == m_blocks.end() || !it->second.mapped || it->second.pid != pid) return false;
  if (it->second.pinned == 0)
    release(it);
  else
    it->second.mapped = false;  // the frames outlive it until the last unpin
  return true;
}

user_memory::block* user_memory::find(uint64_t addr, uint64_t bytes) {
  return const_cast<block*>(std::as_const(*this).find(addr, bytes));
}

// The block, mapped or not, holding [addr, addr + bytes), or nullptr.
const user_memory::block* user_memory::find(uint64_t addr, uint64_t bytes) const {
  auto it = m_blocks.upper_bound(addr);
  if (it == m_blocks.begin()) return nullptr;
  const block& b = std::prev(it)->second;
  if (addr - b.start >= b.bytes || bytes > b.bytes - (addr - b.start)) return nullptr;
  return &b;
}

std::optional<user_memory::block_range> user_memory::block_of(pid_t pid, const void* p,
                                                              uint64_t bytes) const {
  const block* b = find(address(p), std::max<uint64_t>(bytes, 1));
  if (!b || !b->mapped || b->pid != pid) return std::nullopt;
  return block_range{b->start, b->bytes, b->node};
}

namespace {
[[noreturn]] void throw_gone() {
  throw std::runtime_error(
      "the process touched memory it had freed (a segmentation fault on a real machine)");
}
}  // namespace

// A range that overlaps memory the process gave back (its addresses are unmapped, and may be
// mapped again for someone else): refused as the process's SIGSEGV.
void user_memory::check_not_gone(uint64_t addr, uint64_t bytes) const {
  auto it = m_gone.upper_bound(addr + std::max<uint64_t>(bytes, 1) - 1);
  if (it == m_gone.begin()) return;
  --it;
  if (addr < it->first + it->second) throw_gone();
}

void user_memory::read(const void* p, std::span<uint8_t> out) const {
  const block* b = find(address(p), out.size());
  if (!b) check_not_gone(address(p), out.size());
  if (!b || !m_physical) {
    if (!out.empty()) std::memcpy(out.data(), p, out.size());
    return;
  }
  if (!b->mapped) throw_gone();
  m_physical->read(b->bus + (address(p) - b->start), out);
}

void user_memory::write(void* p, std::span<const uint8_t> in) {
  const block* b = find(address(p), in.size());
  if (!b) check_not_gone(address(p), in.size());
  if (!b || !m_physical) {
    if (!in.empty()) std::memcpy(p, in.data(), in.size());
    return;
  }
  if (!b->mapped) throw_gone();
  m_physical->write(b->bus + (address(p) - b->start), in);
}

int user_memory::pin(pid_t pid, const void* p, uint64_t bytes, std::vector<bus_run>& out) {
  out.clear();
  if (bytes == 0) return -EINVAL;
  const uint64_t addr = address(p);
  block* b = find(addr, bytes);
  if (b && (!b->mapped || b->pid != pid)) return -EFAULT;
  if (!b) {
    if (m_physical) return -EFAULT;
    out.push_back({addr, bytes});  // heap memory: its own bus address, nothing to hold
    return 0;
  }
  const uint64_t first = (addr - b->start) / page_bytes;
  const uint64_t last = (addr - b->start + bytes - 1) / page_bytes;
  for (uint64_t i = first; i <= last; ++i)
    if (b->pins[i]++ == 0) ++b->pinned;
  out.push_back({b->bus + (addr - b->start), bytes});  // a block's frames are contiguous
  return 0;
}

int user_memory::unpin(const void* p, uint64_t bytes) {
  if (bytes == 0) return -EINVAL;
  const uint64_t addr = address(p);
  auto it = m_blocks.upper_bound(addr);
  block* b = find(addr, bytes);
  if (!b) return m_physical ? -EINVAL : 0;  // heap memory was never held
  const uint64_t first = (addr - b->start) / page_bytes;
  const uint64_t last = (addr - b->start + bytes - 1) / page_bytes;
  for (uint64_t i = first; i <= last; ++i)
    if (b->pins[i] == 0) return -EINVAL;
  for (uint64_t i = first; i <= last; ++i)
    if (--b->pins[i] == 0) --b->pinned;
  if (!b->mapped && b->pinned == 0) release(std::prev(it));
  return 0;
}

uint64_t user_memory::pinned_pages() const {
  uint64_t n = 0;
  for (const auto& [start, b] : m_blocks)
    for (uint32_t p : b.pins) n += p;
  return n;
}

}  // namespace p2psim::kernel
