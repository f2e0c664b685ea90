// How requests and completions are cut into TLPs (PCIe Base Spec 2.2.7, 2.3.1.1):
// - a request never crosses a 4 KiB boundary;
// - a write carries at most MPS bytes; a read request asks for at most MRRS bytes;
// - a completer may split a read's data into several completions, each ending on a
//   Read Completion Boundary (RCB) and carrying at most MPS bytes.
#pragma once

#include <cstdint>
#include <vector>

namespace p2psim::pcie {

struct chunk {
  uint64_t address;
  uint32_t length;
};

// Cuts [address, address+length) at every `max_bytes` and every 4 KiB boundary.
// The first chunk ends at the next boundary, so later chunks are aligned (what DMA engines do).
std::vector<chunk> split_request(uint64_t address, uint64_t length, uint32_t max_bytes);

// Where the completion that starts at `address` of a read request's data ending at `end`
// stops: at the last RCB boundary within `max_bytes`, so the first completion of an
// unaligned read is short and the rest end RCB-aligned (or `max_bytes` on, if no boundary is).
inline uint64_t completion_stop(uint64_t address, uint64_t end, uint32_t max_bytes, uint32_t rcb) {
  const uint64_t at_boundary = (address + max_bytes) / rcb * rcb;
  const uint64_t stop = at_boundary > address ? at_boundary : address + max_bytes;
  return stop < end ? stop : end;
}

// Cuts one read request's data into completions of at most `max_bytes` (MPS, or the
// completer's preferred size), each ending on an RCB-aligned address except the last.
std::vector<chunk> split_completion(uint64_t address, uint32_t length, uint32_t max_bytes,
                                    uint32_t rcb);

// How many TLPs split_request(address, length, max_bytes) gives, without building them.
uint32_t count_requests(uint64_t address, uint64_t length, uint32_t max_bytes);
// How many completions answer the read requests of up to `request_bytes` each that cover
// [address, address+length), each request's data cut as split_completion does.
uint32_t count_completions(uint64_t address, uint64_t length, uint32_t request_bytes,
                           uint32_t max_bytes, uint32_t rcb);

// Burst fidelity: the payloads of the first and the last of the TLPs a burst stands for
// (a transfer's first TLP is short when it starts unaligned, its last when it ends so).
struct end_tlps {
  uint32_t first = 0, last = 0;
};
// Of split_request(address, length, max_bytes).
end_tlps request_ends(uint64_t address, uint64_t length, uint32_t max_bytes);
// Of the completions count_completions(address, length, request_bytes, max_bytes, rcb) counts.
end_tlps completion_ends(uint64_t address, uint64_t length, uint32_t request_bytes,
                         uint32_t max_bytes, uint32_t rcb);

// Iterates split_request lazily (a 1 GiB DMA is 4 million TLPs: never build the list).
class request_splitter {
 public:
  request_splitter() = default;
  request_splitter(uint64_t address, uint64_t length, uint32_t max_bytes)
      : m_addr(address), m_left(length), m_max(max_bytes) {}
  bool done() const { return m_left == 0; }
  uint64_t remaining() const { return m_left; }
  uint64_t address() const { return m_addr; }  // of the next byte
  uint32_t max_bytes() const { return m_max; }
  chunk next();
  // Burst fidelity: the next up to `max_tlps` TLPs at once, never past a multiple of
  // `boundary` (a power of two of at least max_bytes: a BAR1 or I/O page). tlps = how many.
  chunk next_burst(uint64_t boundary, uint32_t max_tlps, uint32_t& tlps);

 private:
  uint64_t m_addr = 0, m_left = 0;
  uint32_t m_max = 0;
};

}  // namespace p2psim::pcie
