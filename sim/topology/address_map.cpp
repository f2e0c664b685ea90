// PCI enumeration: a depth-first walk from each socket's host bridges that numbers buses,
// places BARs and sizes bridge windows, like firmware does at boot.
#include "sim/topology/address_map.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/config/error.h"
#include "sim/config/units.h"

namespace p2psim::topo {
namespace {

using config::error;
using config::format_address;
using config::format_size;

std::string range_text(const addr_range& r) {
  return fmt::format("[{}, {})", format_address(r.base), format_address(r.end()));
}

addr_range cover(const addr_range& a, const addr_range& b) {
  if (!a.size) return b;
  if (!b.size) return a;
  uint64_t lo = std::min(a.base, b.base), hi = std::max(a.end(), b.end());
  return {lo, hi - lo};
}

uint64_t align_up(uint64_t v, uint64_t align) {
  return (v + align - 1) & ~(align - 1);
}

// A range placed before allocation starts: host memory or an explicit BAR address.
struct fixed_range {
  addr_range range;
  std::string what;  // "BAR1 of gpu0", "host memory of cpu0"
  const device_params* device = nullptr;
  std::string key;  // "bar1_address"
};

struct bar_slot {
  std::string name;  // "BAR1"
  std::string key;   // "bar1"
  uint64_t size;
  std::optional<uint64_t> address;
  addr_range* out;
};

// BAR0 and the BARs the device's kind asks for; a BAR of size 0 is not placed.
std::vector<bar_slot> bars_of(const device_params& d, device_addresses& a) {
  std::vector<bar_slot> bars{{"BAR0", "bar0", d.bar0_bytes, d.bar0_address, &a.bar0}};
  const auto requests = d.settings->bars();
  a.bars.resize(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const auto& r = requests[i];
    a.bars[i].name = r.name;
    a.bars[i].key = r.key;
    if (r.bytes) bars.push_back({r.name, r.key, r.bytes, r.address, &a.bars[i].range});
  }
  return bars;
}

class enumerator {
 public:
  explicit enumerator(const topology& t) : m_t(t) {}

  address_map run() {
    place_memory();
    place_explicit_bars();
    for (size_t i = 0; i < m_t.sockets.size(); ++i) walk_socket(i);
    check_socket_ranges();
    return std::move(m_map);
  }

 private:
  void place_memory() {
    uint64_t base = 0;
    for (const auto& s : m_t.sockets) {
      if (s.memory_bytes > mmio_base - base)
        throw error(loc_of(s, "memory"), "memory",
                    fmt::format("host memory of all sockets must fit below the MMIO apertures at "
                                "{}; {} does not",
                                format_address(mmio_base), s.name));
      addr_range r{base, s.memory_bytes};
      m_map.sockets[s.name].memory = r;
      m_fixed.push_back({r, "host memory of " + s.name, nullptr, ""});
      base += s.memory_bytes;
    }
  }

  void place_explicit_bars() {
    for (const auto& d : m_t.devices) {
      device_addresses scratch;
      for (const auto& bar : bars_of(d, scratch)) {
        if (!bar.address) continue;
        fixed_range f{{*bar.address, bar.size},
                      fmt::format("{} of {}", bar.name, d.name),
                      &d,
                      bar.key + "_address"};
        for (const auto& other : m_fixed)
          if (other.range.overlaps(f.range))
            throw error(loc_of(d, f.key), f.key,
                        fmt::format("{} at {} overlaps {} at {}", f.what, range_text(f.range),
                                    other.what, range_text(other.range)));
        m_fixed.push_back(f);
      }
    }
  }

  uint8_t new_bus(const config::source_loc& where) {
    if (m_next_bus > 255)
      throw error(where, "", "the topology needs more than 256 PCI bus numbers");
    return uint8_t(m_next_bus++);
  }

  void walk_socket(size_t index) {
    const socket_params& s = m_t.sockets[index];
    socket_addresses& sa = m_map.sockets[s.name];
    m_socket = s.name;
    m_aperture = {mmio_base + index * mmio_aperture_bytes, mmio_aperture_bytes};
    m_cursor = m_aperture.base;
    m_map.socket_of[s.name] = s.name;
    const uint8_t first_bus = uint8_t(m_next_bus);
    addr_range used;
    for (int h = 0; h < s.host_bridges; ++h) {
      uint8_t root_bus = new_bus(s.loc);
      sa.root_buses.push_back(root_bus);
      if (h == 0) sa.rc_bdf = make_bdf(root_bus, 0, 0);
      for (const auto* l : m_t.links_below(s.name))
        if (l->host_bridge == h) used = cover(used, walk(*l));
    }
    sa.buses = {first_bus, uint8_t(m_next_bus - 1)};
    sa.mmio = cover(m_aperture, used);  // explicit BARs may lie outside the default aperture
  }

  // The port above l.down and everything below it; returns the port's memory window.
  addr_range walk(const link_params& l) {
    port_window& w = m_map.ports[l.down];
    w.buses.secondary = new_bus(l.loc);
    m_map.socket_of[l.down] = m_socket;
    addr_range window;
    if (const device_params* d = m_t.find_device(l.down)) {
      device_addresses& a = m_map.devices[d->name];
      a.bdf = make_bdf(w.buses.secondary, 0, 0);
      window = place_bars(*d, a);
    } else {
      m_map.switch_bus[l.down] = new_bus(l.loc);
      std::vector<std::string> ports;
      for (const auto* child : m_t.links_below(l.down)) {
        window = cover(window, walk(*child));
        ports.push_back(child->down);
      }
      check_siblings(ports);
    }
    w.buses.subordinate = uint8_t(m_next_bus - 1);
    w.mmio = window;
    return window;
  }

  addr_range place_bars(const device_params& d, device_addresses& a) {
    std::vector<bar_slot> bars = bars_of(d, a);
    // Largest first: fewest alignment holes.
    std::stable_sort(bars.begin(), bars.end(),
                     [](const bar_slot& x, const bar_slot& y) { return x.size > y.size; });
    addr_range all;
    for (const auto& bar : bars) {
      *bar.out = bar.address ? addr_range{*bar.address, bar.size} : allocate(d, bar);
      all = cover(all, *bar.out);
      if (bar.address) m_explicit_below[d.name] = {&d, bar.key + "_address"};
    }
    return all;
  }

  addr_range allocate(const device_params& d, const bar_slot& bar) {
    uint64_t addr = align_up(m_cursor, bar.size);
    while (true) {
      // align_up wraps to a small value when it overflows: caught by addr < m_cursor.
      if (addr < m_cursor || addr > m_aperture.end() || bar.size > m_aperture.end() - addr)
        throw error(
            d.loc, "",
            fmt::format("the MMIO aperture of socket {} ({} from {}) is full: no room "
                        "for {} of {} ({})",
                        m_socket, format_size(m_aperture.size), format_address(m_aperture.base),
                        bar.name, d.name, format_size(bar.size)));
      const fixed_range* hit = nullptr;
      for (const auto& f : m_fixed)
        if (f.range.overlaps({addr, bar.size})) hit = &f;
      if (!hit) break;
      addr = align_up(hit->range.end(), bar.size);
    }
    m_cursor = addr + bar.size;
    return {addr, bar.size};
  }

  // The first device with an explicit address below `node`, to blame for overlapping windows.
  std::pair<const device_params*, std::string> explicit_below(const std::string& node) const {
    if (auto it = m_explicit_below.find(node); it != m_explicit_below.end()) return it->second;
    for (const auto* l : m_t.links_below(node))
      if (auto found = explicit_below(l->down); found.first) return found;
    return {nullptr, ""};
  }

  // Windows of ports on one bus must not overlap: a TLP would have two places to go.
  void check_siblings(const std::vector<std::string>& ports) {
    for (size_t i = 0; i < ports.size(); ++i)
      for (size_t j = 0; j < i; ++j) report_overlap(ports[j], ports[i]);
  }

  void report_overlap(const std::string& a, const std::string& b) {
    const addr_range &wa = m_map.ports[a].mmio, &wb = m_map.ports[b].mmio;
    if (!wa.overlaps(wb)) return;
    auto [dev, key] = explicit_below(b);
    if (!dev) std::tie(dev, key) = explicit_below(a);
    std::string msg = fmt::format(
        "explicit BAR addresses make the memory windows of the ports above {} {} and {} {} "
        "overlap; put addresses of devices below one port next to each other",
        a, range_text(wa), b, range_text(wb));
    if (!dev) throw error(m_t.loc, "", msg);
    throw error(loc_of(*dev, key), key, msg);
  }

  void check_socket_ranges() {
    // Root ports of all host bridges and sockets are siblings as far as addresses go.
    std::vector<std::string> roots;
    for (const auto& s : m_t.sockets)
      for (const auto* l : m_t.links_below(s.name)) roots.push_back(l->down);
    check_siblings(roots);
    for (size_t i = 0; i < m_t.sockets.size(); ++i)
      for (size_t j = 0; j < i; ++j) {
        const auto& a = m_map.sockets[m_t.sockets[j].name];
        const auto& b = m_map.sockets[m_t.sockets[i].name];
        if (!a.mmio.overlaps(b.mmio)) continue;
        auto [dev, key] = explicit_below(m_t.sockets[i].name);
        if (!dev) std::tie(dev, key) = explicit_below(m_t.sockets[j].name);
        std::string msg = fmt::format(
            "explicit BAR addresses make the MMIO ranges of sockets {} {} and {} {} "
            "overlap",
            m_t.sockets[j].name, range_text(a.mmio), m_t.sockets[i].name, range_text(b.mmio));
        if (!dev) throw error(m_t.loc, "", msg);
        throw error(loc_of(*dev, key), key, msg);
      }
  }

  const topology& m_t;
  address_map m_map;
  std::vector<fixed_range> m_fixed;
  std::map<std::string, std::pair<const device_params*, std::string>> m_explicit_below;
  int m_next_bus = 0;
  std::string m_socket;
  addr_range m_aperture;
  uint64_t m_cursor = 0;
};

}  // namespace

address_map enumerate(const topology& t) {
  return enumerator(t).run();
}

}  // namespace p2psim::topo
