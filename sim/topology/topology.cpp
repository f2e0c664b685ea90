#include "sim/topology/topology.h"

#include <stdexcept>

#include "models/device/registry.h"

namespace p2psim::topo {
namespace {

template <class T>
const T* find_named(const std::vector<T>& items, const std::string& name) {
  for (const auto& item : items)
    if (item.name == name) return &item;
  return nullptr;
}

}  // namespace

const device_params* topology::find_device(const std::string& n) const {
  return find_named(devices, n);
}
const socket_params* topology::find_socket(const std::string& n) const {
  return find_named(sockets, n);
}
const switch_params* topology::find_switch(const std::string& n) const {
  return find_named(switches, n);
}
const interconnect_params* topology::find_interconnect(const std::string& n) const {
  return find_named(interconnects, n);
}

const link_params* topology::link_above(const std::string& node) const {
  for (const auto& l : links)
    if (l.down == node) return &l;
  return nullptr;
}

std::vector<const link_params*> topology::links_below(const std::string& node) const {
  std::vector<const link_params*> out;
  for (const auto& l : links)
    if (l.up == node) out.push_back(&l);
  return out;
}

int topology::socket_index(const std::string& n) const {
  for (size_t i = 0; i < sockets.size(); ++i)
    if (sockets[i].name == n) return int(i);
  return -1;
}

device_params make_device(const std::string& name, const std::string& kind) {
  const device::device_kind* k = device::find_kind(kind);
  if (!k) throw std::invalid_argument("no device kind " + kind);
  device_params d;
  d.name = name;
  d.settings = device::config_value(k->defaults());
  return d;
}

}  // namespace p2psim::topo
