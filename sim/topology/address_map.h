// PCI enumeration of a checked topology: bus numbers, requester IDs, BAR addresses, bridge
// windows and host memory ranges. Pure logic; the elaborator builds routing tables from it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/topology/topology.h"

namespace p2psim::topo {

struct addr_range {
  uint64_t base = 0, size = 0;                  // size 0: absent / empty
  uint64_t end() const { return base + size; }  // one past the last byte
  bool contains(uint64_t a) const { return size != 0 && a >= base && a < base + size; }
  bool overlaps(const addr_range& o) const {
    return size && o.size && base < o.end() && o.base < end();
  }
};

struct bus_range {
  uint8_t secondary = 0, subordinate = 0;
  bool contains(uint8_t bus) const { return bus >= secondary && bus <= subordinate; }
};

// Requester / completer ID: bus[15:8] device[7:3] function[2:0].
inline uint16_t make_bdf(uint8_t bus, uint8_t dev, uint8_t fn) {
  return uint16_t(bus << 8 | (dev & 31) << 3 | (fn & 7));
}
inline uint8_t bus_of(uint16_t bdf) {
  return uint8_t(bdf >> 8);
}

// A BAR a device's kind asks for (device::bar_request), where enumeration put it.
struct placed_bar {
  std::string name;  // "BAR1"
  std::string key;   // "bar1"
  addr_range range;  // size 0: not exposed
};

struct device_addresses {
  uint16_t bdf = 0;
  addr_range bar0;
  std::vector<placed_bar> bars;  // the kind's, in the order it asks for them
  // The BAR whose size setting is `key` ("bar1"); size 0 if the device has none such.
  addr_range bar(const std::string& key) const {
    for (const auto& b : bars)
      if (b.key == key) return b.range;
    return {};
  }
};

// A downstream-facing port (root port or switch downstream port), keyed by the node below it.
struct port_window {
  addr_range mmio;  // memory window: covers every BAR below the port
  bus_range buses;  // secondary..subordinate
};

struct socket_addresses {
  addr_range memory;    // host DRAM
  addr_range mmio;      // the aperture all of this socket's BARs are allocated from
  uint16_t rc_bdf = 0;  // the root complex's own requester ID (bus of host bridge 0, dev 0)
  bus_range buses;      // every bus number below this socket
  std::vector<uint8_t> root_buses;  // per host bridge; root ports are devices 1.. on it
};

struct address_map {
  std::map<std::string, device_addresses> devices;  // by device name
  std::map<std::string, port_window> ports;         // by the name of the node below the port
  std::map<std::string, socket_addresses> sockets;  // by socket name
  std::map<std::string, std::string> socket_of;     // any node name -> its socket
  std::map<std::string, uint8_t> switch_bus;        // switch -> its internal bus number
};

// Bases of the simulated physical address space: host memory of all sockets back to back from
// 0, then one MMIO aperture per socket.
inline constexpr uint64_t mmio_base = 0x4000'0000'0000ull;   // 64 TiB
inline constexpr uint64_t mmio_aperture_bytes = 4ull << 40;  // 4 TiB per socket

// DFS PCI enumeration of a checked topology (see docs/formats-topology.md): bus numbers, BARs
// (explicit addresses honoured, others allocated naturally aligned from the socket's aperture,
// largest first per device), bridge windows. Explicit addresses that overlap each other or host
// memory, or that make sibling windows overlap -> config::error at the address key.
address_map enumerate(const topology& t);

}  // namespace p2psim::topo
