// Every topology check, one bad fixture each: message and line:col.
#include <catch2/catch.hpp>

#include <fstream>
#include <random>

#include "sim/topology/topology_graph.h"
#include "sim/topology/topology_loader.h"

using namespace p2psim;
using namespace p2psim::topo;
using Catch::Matchers::Contains;

namespace {

const std::string k_dir = std::string(P2PSIM_SOURCE_DIR) + "/tests/data/topologies/";

config::error load_error(const std::string& name) {
  try {
    load_topology(k_dir + "bad/" + name + ".yaml", {{k_dir + "platforms"}, {}});
  } catch (const config::error& e) {
    return e;
  }
  FAIL("bad/" << name << ".yaml loaded without an error");
  throw std::logic_error("unreachable");
}

struct bad_case {
  const char* file;
  int line, column;  // of the offending value; 0: the whole file
  const char* message;
};

}  // namespace

TEST_CASE("topology checks: each bad fixture fails at the offending key", "[topology][checks]") {
  const bad_case cases[] = {
      {"no_sockets", 1, 1, "a topology needs at least one socket"},
      {"duplicate_name", 6, 12, "duplicate name 'sw0' (already a switch at line 4)"},
      {"dangling_up", 6, 10, "no socket or switch named 'cpu9'"},
      {"dangling_down", 7, 22, "no switch or device named 'gpu7'"},
      {"dangling_between", 5, 27, "no socket named 'cpu2'"},
      {"up_is_device", 8, 10, "'gpu0' is a device; a link's up end is a socket or a switch"},
      {"down_is_socket", 7, 22, "'cpu1' is a socket; a link's down end is a switch or a device"},
      {"two_upstream", 12, 21,
       "gpu0 already has an upstream link (from sw0 at line 11); a node has exactly one"},
      {"unreachable_switch", 5, 5, "switch sw1 has no upstream link, so it is unreachable"},
      {"unreachable_device", 5, 5, "device gpu1 has no upstream link"},
      {"cycle", 11, 21, "links form a cycle: sw0 -> sw1 -> sw0"},
      {"ports_exceeded", 4, 24, "switch sw0 has 3 downstream links but 2 ports"},
      {"gen_range", 6, 33, "gen: expected an integer from 1 to 5, got '6'"},
      {"width", 6, 35, "width: expected one of: 1, 2, 4, 8, 12, 16, 32, got '3'"},
      {"gen_above_platform", 6, 33, "root port of cpu0 (platform tiny_gen3) supports up to Gen3"},
      {"host_bridge_range", 6, 41, "socket cpu0 has 2 host bridges (0..1), got 2"},
      {"interconnect_self", 4, 27, "interconnect qpi0 connects cpu0 to itself"},
      {"sockets_disconnected", 4, 5, "sockets cpu0 and cpu2 have no link between them"},
      {"bar_not_pow2", 4, 24, "a BAR size must be a power of two of at least 4KiB, got 96MiB"},
      {"bar_too_small", 4, 42, "a BAR size must be a power of two of at least 4KiB, got 2KiB"},
      {"bar1_reserved", 4, 46, "bar1_reserved (32MiB) must be smaller than bar1 (32MiB)"},
      {"mps", 4, 23, "expected a power of two from 128B to 4KiB, got 192B"},
      {"rcb", 1, 13, "expected 64B or 128B, got 256B"},
      {"tags", 4, 24, "tags: expected an integer from 1 to 1024, got '2048'"},
      {"unaligned_address", 4, 46, "is not aligned to the BAR's size (256MiB)"},
      {"overlap_explicit", 5, 32,
       "BAR0 of gpu1 at [0x4000_0100_0000, 0x4000_0200_0000) overlaps BAR1 of gpu0"},
      {"overlap_memory", 4, 32, "overlaps host memory of cpu0"},
      {"windows_overlap", 7, 32, "make the memory windows of the ports above sw0"},
      {"unknown_key", 6, 5,
       "unknown key 'vramm' (expected one of: name, model, type, mps, mrrs, rcb, tags, ack_limit, "
       "fc_limit, bar0, bar0_address, bar1, bar1_reserved, bar1_address, vram, vram_latency, "
       "vram_bandwidth, "
       "rdma_writes_ordering, copy_submit, copy_launch, copy_completion, copy_sync_return, "
       "copy_engines, copy_switch, copy_within_start, vram_copy_bandwidth); did you mean 'vram'?"},
      {"rdma_writes_ordering", 4, 40,
       "rdma_writes_ordering: expected one of: none, owner, all_devices, got 'strict'"},
      {"unknown_platform", 2, 28,
       "unknown platform 'haswell' (available: broken_preset, tiny_gen3, tiny_gen4)"},
      {"mixed_platforms", 4, 28,
       "platform: socket cpu1 uses platform 'tiny_gen4' and socket cpu0 'tiny_gen3': a real "
       "machine's sockets have the same CPU; set every socket's platform, or write "
       "`mixed_platforms: true` at the topology's top level to mix them on purpose"},
      {"wrong_type", 6, 33, "gen: expected an integer from 1 to 5, got 'fast'"},
      {"list_not_map", 4, 3, "devices: expected a list of maps, got a map"},
      {"map_not_scalar", 3, 13, "memory: expected a size such as 256MiB or 4KiB, got a map"},
      {"duplicate_key", 6, 5, "bar1: duplicate key (first defined at line"},
      {"bad_size_unit", 2, 47, "unknown size unit 'GB/s'"},
      {"interconnect_bandwidth", 5, 52, "bandwidth must not be negative"},
  };
  for (const auto& c : cases) {
    SECTION(c.file) {
      config::error e = load_error(c.file);
      INFO(e.what());
      CHECK(e.loc.file == k_dir + "bad/" + c.file + ".yaml");
      CHECK(e.loc.line == c.line);
      CHECK(e.loc.column == c.column);
      CHECK_THAT(e.what(), Contains(c.message));
    }
  }
}

TEST_CASE("topology checks: files that are not topologies", "[topology][checks]") {
  config::error e = load_error("syntax");
  CHECK(e.loc.line == 4);
  CHECK_THAT(e.what(), Contains("YAML syntax error"));
  CHECK_THAT(load_error("empty").what(),
             Contains("empty.yaml:1:1: error: the file is empty; expected a map of keys"));
  CHECK_THAT(load_error("not_a_map").what(),
             Contains("expected a map of keys at the top level, got a list"));
  CHECK_THAT(load_error("no_sockets").what(),
             Contains("no_sockets.yaml:1:1: error: sockets: a topology needs at least one socket"));
}

TEST_CASE("topology checks: code-built topologies are checked too", "[topology][checks]") {
  topology t;
  t.sockets.push_back({});
  t.sockets[0].name = "cpu0";
  t.devices.push_back(make_device("gpu0", "gpu"));
  t.links.push_back({});
  t.links[0].up = "cpu0";
  t.links[0].down = "gpu0";
  CHECK_NOTHROW(check_topology(t));
  t.links[0].width = 3;  // no key locations: the error points at the element
  t.links[0].loc = {"generated", 7, 3};
  t.links[0].gen = 9;
  t.sockets[0].platform.max_gen = 4;
  try {
    check_topology(t);
    FAIL("no error");
  } catch (const config::error& e) {
    CHECK(e.loc.str() == "generated:7:3");
    CHECK_THAT(e.what(), Contains("supports up to Gen4, got Gen9"));
  }
  t.links[0].gen = 3;
  t.devices[0].bar0_address = 0x4000'0000'1000ull;  // not aligned to 16 MiB
  CHECK_THROWS_WITH(check_topology(t), Contains("is not aligned to the BAR's size (16MiB)"));
  t.devices[0].bar0_address = ~0ull - (16ull << 20) + 1;  // ends exactly at 2^64
  CHECK_THROWS_WITH(check_topology(t), Contains("runs off the end of the 64-bit address space"));
}

TEST_CASE("topology checks: mangled files give config errors and never crash",
          "[topology][checks]") {
  // Deterministic mutations of a valid file: byte flips, insertions of YAML punctuation and
  // truncations. Anything but success or config::error (a crash, another exception) fails.
  std::ifstream in(k_dir + "good/full.yaml");
  const std::string original((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  REQUIRE(original.size() > 100);
  std::mt19937 rng(12345);
  const std::string punct = ":-[]{},#&*!|>'\"%@` \n\t0x";
  int errors = 0;
  for (int i = 0; i < 600; ++i) {
    std::string text = original;
    const int edits = 1 + int(rng() % 4);
    for (int k = 0; k < edits; ++k) {
      const size_t at = rng() % text.size();
      switch (rng() % 4) {
        case 0:
          text[at] = char(rng() % 256);
          break;
        case 1:
          text.insert(at, 1, punct[rng() % punct.size()]);
          break;
        case 2:
          text.erase(at, 1 + rng() % 8);
          break;
        default:
          text.resize(at);
          break;
      }
      if (text.empty()) text.push_back('x');  // (not = "x": GCC 12 -Wrestrict false positive)
    }
    try {
      config::document d = config::document::parse(text, k_dir + "good/mutant.yaml");
      topology t = load_topology(d, {{k_dir + "platforms"}, {}});
      check_topology(t);
    } catch (const config::error& e) {
      ++errors;
      CHECK_THAT(e.what(), Contains("error: "));
    }
  }
  CHECK(errors > 300);  // most mutations break something
}
