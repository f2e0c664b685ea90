#include "models/driver/nvidia/vram_frames.h"

#include <stdexcept>

namespace p2psim::nv {

std::optional<uint64_t> vram_frames::take() {
  uint64_t f;
  if (!m_freed.empty()) {
    f = *m_freed.begin();
    m_freed.erase(m_freed.begin());
  } else if (m_fresh < count()) {
    f = m_fresh++;
  } else {
    return std::nullopt;
  }
  m_mapped[f] = true;
  ++m_used;
  return f;
}

void vram_frames::hold(uint64_t frame) {
  if (!in_use(frame)) throw std::logic_error("VRAM frame held while free");
  ++m_holds[frame];
}

void vram_frames::unmap(uint64_t frame) {
  if (!m_mapped.at(frame)) throw std::logic_error("VRAM frame unmapped twice");
  m_mapped[frame] = false;
  free_if_unused(frame);
}

void vram_frames::let_go(uint64_t frame) {
  if (m_holds.at(frame) == 0) throw std::logic_error("VRAM frame let go more often than held");
  --m_holds[frame];
  free_if_unused(frame);
}

void vram_frames::free_if_unused(uint64_t frame) {
  if (in_use(frame)) return;
  m_freed.insert(frame);
  --m_used;
}

}  // namespace p2psim::nv
