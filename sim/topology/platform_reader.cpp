#include "sim/topology/platform_reader.h"

#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "sim/config/units.h"
#include "sim/topology/topology_loader.h"

namespace p2psim::topo {
namespace detail {
namespace {

bool is_pow2(uint64_t v) {
  return v && !(v & (v - 1));
}

// A TLP or completion size: a power of two from 64 to 4096 bytes (0 allowed when `zero_ok`).
uint32_t tlp_size(const config::node_reader& r, const std::string& key, uint32_t def,
                  bool zero_ok) {
  uint64_t v = r.size(key, def);
  if ((v == 0 && zero_ok) || (is_pow2(v) && v >= 64 && v <= 4096)) return uint32_t(v);
  r.fail(key, fmt::format("expected a power of two from 64B to 4KiB{}, got {}",
                          zero_ok ? " (or 0)" : "", config::format_size(v)));
}

void read_forwarding(const config::node_reader& r, p2p_forwarding& f, bool is_read) {
  f.routed = r.boolean("routed", f.routed);
  f.bandwidth_gbs = r.bandwidth_gbs("bandwidth", f.bandwidth_gbs);
  if (is_read) f.outstanding = uint32_t(r.integer("outstanding", 0, 65535, f.outstanding));
  r.done();
}

}  // namespace

void read_root_complex(const config::node_reader& r, platform_params& p) {
  p.rc_latency_ns = r.time_ns("latency", p.rc_latency_ns);
  if (auto p2p = r.optional_child("p2p")) {
    p.p2p_tlp_bytes = tlp_size(*p2p, "tlp_size", p.p2p_tlp_bytes, true);
    p.p2p_latency_ns = p2p->time_ns("latency", p.p2p_latency_ns);
    if (auto w = p2p->optional_child("write")) read_forwarding(*w, p.p2p_write, false);
    if (auto rd = p2p->optional_child("read")) read_forwarding(*rd, p.p2p_read, true);
    p2p->done();
  }
  r.done();
}

void read_memory(const config::node_reader& r, platform_params& p) {
  p.mem_latency_ns = r.time_ns("latency", p.mem_latency_ns);
  p.mem_bandwidth_gbs = r.bandwidth_gbs("bandwidth", p.mem_bandwidth_gbs);
  p.mem_cpl_bytes = tlp_size(r, "completion_size", p.mem_cpl_bytes, false);
  r.done();
}

void read_interconnect(const config::node_reader& r, platform_params& p) {
  p.qpi_bandwidth_gbs = r.bandwidth_gbs("bandwidth", p.qpi_bandwidth_gbs);
  // The link's speed, not a cap: every byte takes 1/bandwidth.
  if (p.qpi_bandwidth_gbs == 0) r.fail("bandwidth", "an interconnect's bandwidth must be above 0");
  p.qpi_latency_ns = r.time_ns("latency", p.qpi_latency_ns);
  if (auto p2p = r.optional_child("p2p")) {
    if (auto w = p2p->optional_child("write")) read_forwarding(*w, p.qpi_p2p_write, false);
    if (auto rd = p2p->optional_child("read")) read_forwarding(*rd, p.qpi_p2p_read, true);
    p2p->done();
  }
  r.done();
}

iommu_config read_iommu(const config::node_reader& r) {
  iommu_config c;
  const std::string m = r.choice("mode", {"off", "passthrough", "translating"}, "off");
  c.mode = m == "translating"   ? iommu_mode::translating
           : m == "passthrough" ? iommu_mode::passthrough
                                : iommu_mode::off;
  // A PCIe request never crosses 4 KiB, so with pages of at least 4 KiB each TLP needs one
  // translation.
  c.page_bytes = r.size("page_size", c.page_bytes);
  if (!is_pow2(c.page_bytes) || c.page_bytes < 4096 || c.page_bytes > (1ull << 30))
    r.fail("page_size", fmt::format("expected a power of two from 4KiB to 1GiB, got {}",
                                    config::format_size(c.page_bytes)));
  c.iotlb_entries = uint32_t(r.integer("iotlb_entries", 0, 1 << 20, c.iotlb_entries));
  c.miss_latency_ns = r.time_ns("miss_latency", c.miss_latency_ns);
  r.done();
  return c;
}

}  // namespace detail

platform_params load_platform(const std::string& path) {
  config::document doc = config::document::load(path);
  config::node_reader r = doc.root();
  platform_params p;
  const std::string stem = std::filesystem::path(path).stem().string();
  p.loc = r.loc();
  p.name = r.str("name", stem);
  if (p.name != stem)
    r.fail("name", fmt::format("preset '{}' must be in a file named {}.yaml (this is {}.yaml)",
                               p.name, p.name, stem));
  p.description = r.str("description", "");
  p.max_gen = int(r.integer("max_gen", 1, 5, p.max_gen));
  if (auto rc = r.optional_child("root_complex")) detail::read_root_complex(*rc, p);
  if (auto mem = r.optional_child("memory")) detail::read_memory(*mem, p);
  if (auto qpi = r.optional_child("interconnect")) detail::read_interconnect(*qpi, p);
  r.done();
  for (const auto& key : r.keys()) p.key_locs[key] = r.loc(key);
  return p;
}

std::vector<std::string> available_platforms(const std::vector<std::string>& dirs) {
  namespace fs = std::filesystem;
  std::set<std::string> names;
  for (const auto& dir : dirs) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().extension() == ".yaml") names.insert(it->path().stem().string());
  }
  return {names.begin(), names.end()};
}

}  // namespace p2psim::topo
