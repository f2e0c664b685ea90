// The reference model (sim/litmus/reference): the table's cells as the spec writes them, and
// whole catalogue tests enumerated with rules taken out, each of which must change what the
// model allows (the model's own mutation test).
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "sim/litmus/litmus_spec.h"
#include "sim/litmus/reference/pcie_table.h"
#include "sim/litmus/reference/reference_model.h"
#include "sim/topology/topology_loader.h"

using namespace p2psim;
using namespace p2psim::litmus;
using reference::tlp_kind;
using reference::tlp_ordering;

namespace {

const std::string k_source = P2PSIM_SOURCE_DIR;

struct loaded {
  litmus_spec test;
  topo::topology topology;
};

loaded load(const std::string& file) {
  litmus_spec t = load_litmus(k_source + "/scenarios/litmus/" + file);
  topo::load_options lo;
  lo.platform_dirs = {k_source + "/topologies/platforms"};
  lo.overrides = t.topology_sets;
  return {t, topo::load_topology(t.topology, lo)};
}

// Whether an outcome satisfying the test's condition is allowed with `off` taken out.
bool condition_allowed(const loaded& l, const std::set<std::string>& off = {}) {
  reference::model_options o;
  o.rules.off = off;
  const auto r = reference::enumerate(l.test, l.topology, o);
  REQUIRE(r.error.empty());
  REQUIRE(r.complete);
  for (const auto& [key, outcome] : r.outcomes)
    if (outcome.matches) return true;
  return false;
}

}  // namespace

TEST_CASE("reference table: the producer/consumer column and its attribute cases",
          "[unit][litmus][reference]") {
  const reference::rule_set all;
  const tlp_ordering write{tlp_kind::posted, false, false, 1, -1};
  tlp_ordering ro_write = write, ido_write = write;
  ro_write.ro = true;
  ido_write.ido = true;
  CHECK_FALSE(reference::may_pass(write, write, all));      // P-P a
  CHECK(reference::may_pass(ro_write, write, all));         // P-P b, RO
  CHECK_FALSE(reference::may_pass(ido_write, write, all));  // IDO: same requester
  tlp_ordering other = write;
  other.requester = 2;
  CHECK(reference::may_pass(ido_write, other, all));  // IDO: another requester
  tlp_ordering read{tlp_kind::read, true, false, 1, 0};
  CHECK_FALSE(reference::may_pass(read, write, all));  // RO never lets a read pass a write
  tlp_ordering cpl{tlp_kind::completion, true, false, 3, 0};
  CHECK(reference::may_pass(cpl, write, all));  // Cpl-P b, RO
  cpl.ro = false;
  CHECK_FALSE(reference::may_pass(cpl, write, all));  // Cpl-P a
  const tlp_ordering same_request{tlp_kind::completion, false, false, 3, 0};
  tlp_ordering other_request = same_request;
  other_request.request = 1;
  CHECK_FALSE(reference::may_pass(same_request, same_request, all));  // Cpl-Cpl b
  CHECK(reference::may_pass(other_request, same_request, all));       // Cpl-Cpl a
  CHECK(reference::may_pass(write, read, all));                       // P-NPR: Yes
  tlp_ordering tc1_write = write;
  tc1_write.tc = 1;
  CHECK(reference::may_pass(tc1_write, write, all));  // another Traffic Class: not ordered
  std::string why;
  reference::rule_set no_pp;
  no_pp.off = {"P-P"};
  CHECK(reference::may_pass(write, write, no_pp, &why));
  CHECK(why == "P-P (off)");
}

TEST_CASE("reference model: message passing, forbidden by P-P, allowed with RO",
          "[unit][litmus][reference]") {
  const loaded mp = load("mp_switch.yaml");
  CHECK_FALSE(condition_allowed(mp));
  CHECK(condition_allowed(mp, {"P-P"}));
  const loaded ro = load("mp_ro_switch.yaml");
  CHECK(condition_allowed(ro));
  CHECK_FALSE(condition_allowed(ro, {"P-P:RO"}));
}

TEST_CASE("reference model: a completion pushes the writes ahead of it (Cpl-P)",
          "[unit][litmus][reference]") {
  const loaded cpl = load("cpl_p.yaml");
  CHECK_FALSE(condition_allowed(cpl));
  CHECK(condition_allowed(cpl, {"Cpl-P"}));
}

TEST_CASE("reference model: the GPU rules of guide 5.7", "[unit][litmus][reference]") {
  // A running kernel with WRITES_ORDERING none may see the flag and stale data; owner may not.
  CHECK(condition_allowed(load("kernel_concurrent_none.yaml")));
  const loaded owner = load("kernel_concurrent_owner.yaml");
  CHECK_FALSE(condition_allowed(owner));
  CHECK(condition_allowed(owner, {"GPU:writes-ordering"}));
  // A flush to the owner, and a CPU synchronization, make landed writes visible.
  const loaded flush = load("kernel_sees_after_flush_owner.yaml");
  CHECK_FALSE(condition_allowed(flush));
  CHECK(condition_allowed(flush, {"GPU:flush"}));
  const loaded sync = load("kernel_sees_after_sync.yaml");
  CHECK_FALSE(condition_allowed(sync));
  CHECK(condition_allowed(sync, {"GPU:cpu-sync"}));
}

TEST_CASE("reference model: a copy that returns early, and SYNC_MEMOPS",
          "[unit][litmus][reference]") {
  CHECK(condition_allowed(load("dtod_then_rdma_read.yaml")));
  const loaded sync_memops = load("dtod_then_rdma_read_sync_memops.yaml");
  CHECK_FALSE(condition_allowed(sync_memops));
  CHECK(condition_allowed(sync_memops, {"CUDA:SYNC_MEMOPS"}));
}

TEST_CASE("reference model: a BAR1 read returns what landed (GPU:bar1-read-back)",
          "[unit][litmus][reference]") {
  const loaded raw = load("bar1_read_sees_write.yaml");
  CHECK_FALSE(condition_allowed(raw));
  CHECK(condition_allowed(raw, {"GPU:bar1-read-back"}));
}

TEST_CASE("reference model: a root complex that commits RO writes out of order",
          "[unit][litmus][reference]") {
  // No link is slow: only the root complex's way into memory lets the flag pass the data.
  const loaded ro = load("mp_ro_host_rc_reorders.yaml");
  CHECK(condition_allowed(ro));
  CHECK_FALSE(condition_allowed(ro, {"P-P:RO"}));
  const loaded data_only = load("mp_ro_data_host_rc_reorders.yaml");
  CHECK_FALSE(condition_allowed(data_only));
  CHECK(condition_allowed(data_only, {"P-P"}));
}

TEST_CASE("reference model: No Snoop writes and the CPUs' cached lines",
          "[unit][litmus][reference]") {
  const loaded stale = load("no_snoop_stale_line.yaml");
  CHECK(condition_allowed(stale));
  CHECK_FALSE(condition_allowed(stale, {"Host:no-snoop"}));
  const loaded flushed = load("no_snoop_flush_cache.yaml");
  CHECK_FALSE(condition_allowed(flushed));
  const loaded snooped = load("snooped_write_drops_line.yaml");
  CHECK_FALSE(condition_allowed(snooped));
  CHECK(condition_allowed(snooped, {"Host:snoop"}));
}
