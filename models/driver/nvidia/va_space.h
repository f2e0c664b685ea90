// One process's unified virtual address range as the CUDA allocator hands it out: a free list
// of byte ranges, first fit from the lowest address, so a freed range is reused by the next
// allocation that fits (guide 5.6's example). Which 64 KiB pages a new allocation may touch is
// the caller's decision (a page of another context, or one a pin holds, is not usable). Pure
// logic.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>

namespace p2psim::nv {

inline constexpr uint64_t gpu_page_bytes = 64 * 1024;  // GPU_BOUND_SIZE (guide 6.2)
// cuMemAlloc's layout as driver 580 shows it on an H100 (tests/data/cuda_probe): sizes round
// up to 512 B and small allocations are packed into 2 MiB chunks.
inline constexpr uint64_t alloc_granule_bytes = 512;
inline constexpr uint64_t alloc_chunk_bytes = 2 * 1024 * 1024;
// Each context takes its VA from blocks of its own (a new context's first allocation lands far
// from every other context's, and never on a VA another live context just freed).
inline constexpr uint64_t ctx_block_bytes = 1ull << 30;
// What libcuda keeps for itself in a new context's first block, 2 MiB from its start: on
// driver 580 a context's first 2 MiB allocation (or reservation) lands at the block's start
// and the next one 74 MiB after it (tests/data/cuda_probe/h200_cuda13_vmm.txt, R0 and R2;
// h200_cuda13_dmabuf.txt, A2 and A4).
inline constexpr uint64_t ctx_own_offset = 2ull << 20;
inline constexpr uint64_t ctx_own_bytes = 72ull << 20;
// cuMemAlloc allocations this large go to blocks of their own, below the context's first:
// driver 580 put a 64 MiB one 478 MiB below the context's first allocation, with nothing
// mapped after it, and a 4 MiB one in the first block (h200_cuda13_dmabuf.txt, A64 and A4;
// where between 4 and 64 MiB the cut lies was not probed).
inline constexpr uint64_t large_alloc_bytes = 64ull << 20;
inline constexpr uint64_t uva_base = 0x2'0000'0000ull;  // the CUDA VA range (guide 7.1)
inline constexpr uint64_t uva_limit = 1ull << 40;       // "within the first 40 bits"

class va_space {
 public:
  va_space(uint64_t base, uint64_t limit) { m_free[base] = limit - base; }

  // The lowest `size` bytes starting on a multiple of `align` (a power of two) whose first and
  // last 64 KiB pages `usable` accepts, now taken; nullopt if there is none. Pages strictly
  // inside a free range belong to no one, so only the two end pages are asked about.
  std::optional<uint64_t> take(uint64_t size, uint64_t align,
                               const std::function<bool(uint64_t page)>& usable);
  // The highest such range instead (every page usable).
  std::optional<uint64_t> take_highest(uint64_t size, uint64_t align);
  // Takes exactly [start, start + size) if all of it is free; false (nothing taken) otherwise.
  bool take_at(uint64_t start, uint64_t size);
  // Returns a taken range, merged with its free neighbours.
  void give_back(uint64_t start, uint64_t size);

 private:
  std::map<uint64_t, uint64_t> m_free;  // start -> size
};

}  // namespace p2psim::nv
