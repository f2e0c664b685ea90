// The 64 KiB frames of one GPU's VRAM as the driver hands them out: a frame is in use while a
// process's VA page maps it or while a pin holds it (docs/driver-model.md, "Memory"). A frame
// a persistent pin holds outlives its allocation (guide 4.2) and is never handed out again
// until the pin is released. Pure logic.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <vector>

namespace p2psim::nv {

class vram_frames {
 public:
  explicit vram_frames(uint64_t count) : m_mapped(count, false), m_holds(count, 0) {}

  // The lowest free frame, now mapped by a VA page; nullopt when VRAM is full.
  std::optional<uint64_t> take();
  // Its VA page went: the frame is free once no pin holds it.
  void unmap(uint64_t frame);
  // A pin or a dma-buf holds the frame (one in use) / lets go of it.
  void hold(uint64_t frame);
  void let_go(uint64_t frame);
  bool held(uint64_t frame) const { return m_holds.at(frame) > 0; }
  bool in_use(uint64_t frame) const { return m_mapped.at(frame) || m_holds.at(frame) > 0; }
  uint64_t count() const { return m_mapped.size(); }
  uint64_t used() const { return m_used; }  // frames in use

 private:
  void free_if_unused(uint64_t frame);

  std::vector<bool> m_mapped;
  std::vector<uint32_t> m_holds;
  std::set<uint64_t> m_freed;  // free frames below m_fresh
  uint64_t m_fresh = 0;        // every frame from here on has never been used
  uint64_t m_used = 0;
};

}  // namespace p2psim::nv
