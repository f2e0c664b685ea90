#include "sim/core/scenario.h"

#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "sim/config/error.h"
#include "sim/config/reader.h"
#include "sim/core/program.h"

namespace p2psim::core {

namespace fs = std::filesystem;

namespace {

using config::reject_unknown;

transfer_spec read_transfer(const config::node_reader& r, size_t index) {
  reject_unknown(
      r, {"name", "initiator", "target", "op", "size", "count", "concurrency", "relaxed_ordering",
          "id_based_ordering", "no_snoop", "traffic_class", "map_bar1", "iommu_map", "start"});
  transfer_spec t;
  t.loc = r.loc();
  t.name = r.str("name", "transfer" + std::to_string(index));
  t.initiator = r.str("initiator");
  t.target = r.str("target");
  t.write = r.choice("op", {"write", "read"}) == "write";
  t.size = r.size("size");
  if (t.size == 0) r.fail("size", "must be at least 1 byte");
  if (t.size > (1ull << 40)) r.fail("size", "must be at most 1TiB");
  t.count = int(r.integer("count", 1, 1000000, 1));
  t.concurrency = int(r.integer("concurrency", 1, 1024, 1));
  t.attrs.relaxed_ordering = r.boolean("relaxed_ordering", false);
  t.attrs.id_based_ordering = r.boolean("id_based_ordering", false);
  t.attrs.no_snoop = r.boolean("no_snoop", false);
  t.attrs.traffic_class = uint8_t(r.integer("traffic_class", 0, 7, 0));
  t.map_bar1 = r.boolean("map_bar1", true);
  t.iommu_map = r.boolean("iommu_map", true);
  t.with_previous =
      r.choice("start", {"after_previous", "with_previous"}, "after_previous") == "with_previous";
  if (t.with_previous && index == 0)
    r.fail("start", "the first transfer has no previous one to start with");
  if (t.initiator == t.target) r.fail("target", "a device cannot transfer to itself");
  r.done();
  return t;
}

transfer_matrix read_matrix(const config::node_reader& r) {
  reject_unknown(r, {"devices", "op", "size", "count"});
  transfer_matrix m;
  m.loc = r.loc();
  m.devices = r.string_list("devices");
  if (m.devices.size() < 2) r.fail("devices", "a matrix needs at least two devices");
  std::set<std::string> seen;
  for (const auto& d : m.devices)
    if (!seen.insert(d).second) r.fail("devices", "'" + d + "' is listed twice");
  m.write = r.choice("op", {"write", "read"}) == "write";
  m.size = r.size("size");
  if (m.size == 0) r.fail("size", "must be at least 1 byte");
  if (m.size > (1ull << 40)) r.fail("size", "must be at most 1TiB");
  m.count = int(r.integer("count", 1, 1000000, 1));
  r.done();
  return m;
}

}  // namespace

std::string matrix_transfer_name(const std::string& src, const std::string& dst) {
  return src + "->" + dst;
}

std::vector<transfer_spec> expand_matrix(const transfer_matrix& m) {
  std::vector<transfer_spec> out;
  for (const auto& src : m.devices)
    for (const auto& dst : m.devices) {
      if (src == dst) continue;
      transfer_spec t;
      t.name = matrix_transfer_name(src, dst);
      t.initiator = src;
      t.target = dst;
      t.write = m.write;
      t.size = m.size;
      t.count = m.count;
      t.from_matrix = true;
      t.loc = m.loc;
      out.push_back(t);
    }
  return out;
}

const char* to_string(fidelity f) {
  return f == fidelity::burst ? "burst" : "tlp";
}

scenario load_scenario(const std::string& path,
                       const std::vector<config::override_spec>& overrides) {
  config::document doc = config::document::load(path);
  for (const auto& o : overrides) apply_override(doc, o, config::override_rules{});
  config::node_reader r = doc.root();
  // Other kinds of p2psim file, given where a scenario belongs: say what they are.
  for (const char* key : {"sockets", "switches", "devices", "links"})
    if (r.has(key))
      r.fail(key, fmt::format("{} is a topology file, not a scenario: `p2psim topo {}` shows it, "
                              "and a scenario names it under `topology:` "
                              "(docs/formats-scenario.md)",
                              path, path));
  for (const char* key : {"agents", "locations"})
    if (r.has(key))
      r.fail(key, fmt::format("{} is a litmus test, not a scenario: `p2psim litmus {}` runs it",
                              path, path));
  reject_unknown(
      r, {"name", "description", "topology", "topologies", "transfers", "measure", "verify", "seed",
          "fidelity", "matrix", "driver", "peer_driver", "processes", "program", "watchdog"});
  scenario s;
  s.file = path;
  s.name = r.str("name", fs::path(path).stem().string());
  s.description = r.str("description", "");
  const fs::path dir = fs::path(path).parent_path();
  auto resolve = [&](const std::string& p, const char* key) {
    fs::path q(p);
    std::string full = (q.is_absolute() ? q : dir / q).lexically_normal().string();
    std::error_code ec;  // a name the file system cannot take (too long, say) is no file either
    if (!fs::is_regular_file(full, ec)) r.fail(key, "no topology file " + full);
    return full;
  };
  if (r.has("topology") && r.has("topologies"))
    r.fail("topologies", "give either `topology` or `topologies`, not both");
  if (r.has("topology")) {
    s.topologies.push_back(resolve(r.str("topology"), "topology"));
    s.topology_locs.push_back(r.loc("topology"));
  } else {
    for (const auto& t : r.string_list("topologies")) {
      s.topologies.push_back(resolve(t, "topologies"));
      s.topology_locs.push_back(r.loc("topologies"));
    }
    if (s.topologies.empty()) r.fail("topologies", "name at least one topology file");
  }
  std::set<std::string> names;
  size_t i = 0;
  for (const auto& t : r.optional_list("transfers")) {
    s.transfers.push_back(read_transfer(t, i++));
    if (!names.insert(s.transfers.back().name).second)
      t.fail("name", "duplicate transfer name '" + s.transfers.back().name + "'");
  }
  if (auto m = r.optional_child("matrix")) {
    s.matrix = read_matrix(*m);
    for (auto& t : expand_matrix(*s.matrix)) {
      if (!names.insert(t.name).second)
        m->fail("devices", "the matrix's transfer '" + t.name + "' has the name of a listed one");
      s.transfers.push_back(std::move(t));
    }
  }
  s.program = read_program(r);
  if (s.transfers.empty() && s.program.empty())
    r.fail("transfers", "list at least one transfer, give a `matrix`, or give a `program`");
  if (auto m = r.optional_child("measure")) {
    reject_unknown(*m, {"bandwidth", "latency"});
    s.measure_bandwidth = m->boolean("bandwidth", true);
    if (m->has("latency")) {
      if (m->raw("latency").IsScalar()) {
        s.measure_latency = m->boolean("latency");
      } else {
        auto l = m->child("latency");
        s.latency_size = l.size("size", 4);
        if (s.latency_size == 0 || s.latency_size > 4096)
          l.fail("size", "a latency probe moves 1 byte to 4KiB");
        s.latency_samples = int(l.integer("samples", 1, 10000, 8));
        l.done();
      }
    }
    m->done();
  }
  s.verify = r.boolean("verify", true);
  s.seed = uint64_t(r.integer("seed", 0, INT64_MAX, 1));
  s.fidelity =
      r.choice("fidelity", {"tlp", "burst"}, "tlp") == "burst" ? fidelity::burst : fidelity::tlp;
  s.watchdog_seconds = r.time_ns("watchdog", 60e9) / 1e9;
  if (s.watchdog_seconds < 0) r.fail("watchdog", "must be zero (off) or a positive time");
  r.done();
  return s;
}

}  // namespace p2psim::core
