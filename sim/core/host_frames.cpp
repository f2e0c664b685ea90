#include "sim/core/host_frames.h"

#include <stdexcept>

namespace p2psim::core {

host_frames::host_frames(fabric_system& sys) {
  for (const auto& s : sys.topology().sockets) m_nodes.push_back({sys.find_socket(s.name), {}});
}

int host_frames::node_of(const std::string& name) const {
  for (size_t i = 0; i < m_nodes.size(); ++i)
    if (name == m_nodes[i].rc->basename()) return int(i);
  return -1;
}

std::map<uint64_t, uint64_t>& host_frames::taken(const root_complex::root_complex& rc) {
  for (auto& n : m_nodes)
    if (n.rc == &rc) return n.taken;
  throw std::logic_error("host_frames: a socket the topology does not have");
}

std::optional<uint64_t> host_frames::allocate(int node_index, uint64_t bytes) {
  node& n = m_nodes.at(size_t(node_index));
  const uint64_t capacity = n.rc->memory().capacity();
  if (capacity < staging_bytes) return std::nullopt;
  const uint64_t limit = capacity - staging_bytes;
  uint64_t at = 0;
  for (const auto& [offset, length] : n.taken) {
    if (offset >= at && offset - at >= bytes) break;
    at = std::max(at, offset + length);
  }
  if (at > limit || bytes > limit - at) return std::nullopt;
  n.taken[at] = bytes;
  return n.rc->params().memory.base + at;
}

std::pair<const host_frames::node*, uint64_t> host_frames::holding(uint64_t bus,
                                                                   uint64_t bytes) const {
  for (const auto& n : m_nodes) {
    const uint64_t base = n.rc->params().memory.base;
    if (bus >= base && bus - base < n.rc->memory().capacity() &&
        bytes <= n.rc->memory().capacity() - (bus - base))
      return {&n, bus - base};
  }
  throw std::logic_error("host_frames: an address in no socket's memory");
}

std::pair<memory::backing_store*, uint64_t> host_frames::locate(uint64_t bus) const {
  auto [n, offset] = holding(bus, 1);
  return {&n->rc->memory(), offset};
}

void host_frames::free(uint64_t bus, uint64_t bytes) {
  auto [n, offset] = holding(bus, bytes);
  const_cast<node*>(n)->taken.erase(offset);
}

void host_frames::read(uint64_t bus, std::span<uint8_t> out) const {
  auto [n, offset] = holding(bus, out.size());
  n->rc->memory().read(offset, out);
}

void host_frames::write(uint64_t bus, std::span<const uint8_t> in) {
  auto [n, offset] = holding(bus, in.size());
  n->rc->memory().write(offset, in);
}

}  // namespace p2psim::core
