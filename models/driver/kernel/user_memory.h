// The memory of a simulated machine's processes as its kernel manages it: blocks of user
// pages (what malloc, or libcuda's page-locked allocations, get from the kernel), the physical
// frames behind them, and pinning (Linux's pin_user_pages / unpin_user_pages: what a device
// driver does before DMA to user memory, GPUDirect RDMA guide 13.3, chapter 2, and what
// cuMemHostAlloc / cuMemHostRegister do). Pure C++.
//
// With `physical_memory` set (a simulation), a block's bytes live in frames of a NUMA node's
// DRAM, where devices reach them at bus addresses, and its address is reserved address space
// that the CPU side reads and writes only through read() / write(): whatever a device's DMA
// put there is what a later read() sees, and a stray dereference crashes rather than read
// stale bytes. Without one, blocks are host heap memory, their bus address is their own
// address, and read() / write() are memcpy (the CUDA model's instant copies use them so).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

namespace p2psim::kernel {

using pid_t = int;

inline constexpr uint64_t page_bytes = 4096;  // the CPU's base page

// A machine's DRAM as devices reach it: NUMA nodes of frames at bus addresses.
class physical_memory {
 public:
  virtual ~physical_memory() = default;
  virtual int nodes() const = 0;
  // `bytes` (a page multiple) of contiguous frames on `node`: their bus address, or nothing
  // when the node has no such run free.
  virtual std::optional<uint64_t> allocate(int node, uint64_t bytes) = 0;
  virtual void free(uint64_t bus, uint64_t bytes) = 0;
  virtual void read(uint64_t bus, std::span<uint8_t> out) const = 0;
  virtual void write(uint64_t bus, std::span<const uint8_t> in) = 0;
};

// A contiguous run of a pinned range's frames, as a driver programs its DMA engine with.
struct bus_run {
  uint64_t bus = 0, bytes = 0;
};

class user_memory {
 public:
  user_memory() = default;
  ~user_memory();
  user_memory(const user_memory&) = delete;
  user_memory& operator=(const user_memory&) = delete;

  // Frames come from `m` from now on (not owned; nullptr: the host heap). Set before any
  // block is allocated.
  void set_physical(physical_memory* m);
  physical_memory* physical() const { return m_physical; }

  // A new block of `bytes` for process `pid` on NUMA node `node`, page aligned and zeroed;
  // nullptr when `bytes` is 0 or no frames are free.
  void* allocate(pid_t pid, uint64_t bytes, int node = 0);
  // The block starting at `p` is gone from `pid`'s address space; frames still pinned stay
  // allocated until their last unpin, so DMA into them never lands in another block. False
  // when `p` is no live block of `pid`'s.
  bool free(pid_t pid, const void* p);
  // The live block of `pid` holding [p, p + bytes): its start and size.
  struct block_range {
    uint64_t start = 0, bytes = 0;
    int node = 0;
  };
  std::optional<block_range> block_of(pid_t pid, const void* p, uint64_t bytes = 1) const;

  // The CPU's loads and stores. Outside any block (a caller's own heap memory, without a
  // physical memory): memcpy. Memory of a freed block is gone: std::runtime_error, where a
  // process would take a SIGSEGV.
  void read(const void* p, std::span<uint8_t> out) const;
  void write(void* p, std::span<const uint8_t> in);

  // pin_user_pages: the pages holding [p, p + bytes) of `pid`'s blocks stay in their frames
  // until unpinned; `out` gets their bus runs (from p, not from its page). -EFAULT when a byte
  // of the range is in no live block of `pid`'s (or, without a physical memory, for nothing:
  // heap memory is its own bus address), -EINVAL for 0 bytes. Pins nest.
  int pin(pid_t pid, const void* p, uint64_t bytes, std::vector<bus_run>& out);
  // unpin_user_pages for a range pinned before. -EINVAL when a page of it is not pinned.
  int unpin(const void* p, uint64_t bytes);
  // Pages pinned now (with their nesting), for tests and statistics.
  uint64_t pinned_pages() const;

 private:
  struct block {
    pid_t pid = 0;
    uint64_t start = 0, bytes = 0;  // bytes: a page multiple
    int node = 0;
    uint64_t bus = 0;            // its first frame (with no physical memory: == start)
    bool mapped = true;          // false once freed while pages were still pinned
    std::vector<uint32_t> pins;  // per page
    uint64_t pinned = 0;         // pages with pins > 0
  };
  block* find(uint64_t addr, uint64_t bytes);
  const block* find(uint64_t addr, uint64_t bytes) const;
  void release(std::map<uint64_t, block>::iterator it);
  // Maps `bytes` at the next address of this memory's own range when the host's kernel lets
  // it: the same addresses on every run, so that results naming one (a driver's message) do
  // not depend on where the host put the mapping. Elsewhere when it does not.
  void* map_next(uint64_t bytes, int prot, int flags);

  physical_memory* m_physical = nullptr;
  // High enough to stay clear of the program's heap and below the host kernel's mmap area
  // (and in AddressSanitizer's high memory range).
  uint64_t m_next = 0x6000'0000'0000;
  std::map<uint64_t, block> m_blocks;   // by start, freed-but-pinned ones included
  std::map<uint64_t, uint64_t> m_gone;  // blocks given back, their addresses still reserved:
                                        // start -> bytes (the guard page included)
  void check_not_gone(uint64_t addr, uint64_t bytes) const;
};

}  // namespace p2psim::kernel
