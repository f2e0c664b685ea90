// Bad input stops p2psim with exit code 2 and a message naming file:line:column and the key
// (docs/design.md, "What users see"), never a crash or a silent default.
#include <catch2/catch.hpp>

#include "tests/cli/cli_harness.h"

namespace {

void expect_rejected(const std::string& cmd, const std::string& location, const std::string& key,
                     const std::string& words) {
  auto r = p2psim::test::run_cli(cmd);
  INFO(cmd << "\nstderr: " << r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(location) != std::string::npos);
  CHECK(r.err.find(key) != std::string::npos);
  CHECK(r.err.find(words) != std::string::npos);
}

}  // namespace

TEST_CASE("unknown key in a scenario names file:line:col and the key", "[cli][bad]") {
  expect_rejected("run tests/corpus/bad/scenario_unknown_key.yaml",
                  "scenario_unknown_key.yaml:5:67", "sise", "unknown key");
}
TEST_CASE("wrong type names the key and what was expected", "[cli][bad]") {
  expect_rejected("run tests/corpus/bad/scenario_wrong_type.yaml", "scenario_wrong_type.yaml:5:80",
                  "count", "expected an integer");
}
TEST_CASE("wrong unit is rejected", "[cli][bad]") {
  expect_rejected("run tests/corpus/bad/scenario_bad_unit.yaml", "scenario_bad_unit.yaml:5:67",
                  "size", "unknown size unit");
}
TEST_CASE("YAML syntax error names the line", "[cli][bad]") {
  expect_rejected("run tests/corpus/bad/scenario_syntax.yaml", "scenario_syntax.yaml:5:", "YAML",
                  "syntax error");
}
TEST_CASE("unknown op value is rejected", "[cli][bad]") {
  expect_rejected("run tests/corpus/bad/scenario_op.yaml", "scenario_op.yaml:5:54", "op",
                  "expected one of");
}
TEST_CASE("dangling device reference in a scenario", "[cli][bad]") {
  expect_rejected("run tests/corpus/bad/scenario_dangling_device.yaml",
                  "scenario_dangling_device.yaml:5:5", "initiator", "nic7");
}
TEST_CASE("missing topology file is named at the scenario's line", "[cli][bad]") {
  expect_rejected("run tests/corpus/bad/scenario_missing_topology.yaml",
                  "scenario_missing_topology.yaml:3:11", "topology", "no topology file");
}
TEST_CASE("a transfer larger than BAR1 less its reserved region is impossible", "[cli][bad]") {
  expect_rejected("run tests/corpus/bad/scenario_too_big_for_bar1.yaml",
                  "scenario_too_big_for_bar1.yaml:5:5", "size", "BAR1");
}
TEST_CASE("dangling link reference in a topology", "[cli][bad]") {
  expect_rejected("topo tests/corpus/bad/topology_dangling_link.yaml",
                  "topology_dangling_link.yaml:8:22", "down", "gpu9");
}
TEST_CASE("a cycle of links is an impossible topology", "[cli][bad]") {
  expect_rejected("topo tests/corpus/bad/topology_cycle.yaml", "topology_cycle.yaml:13:21", "down",
                  "cycle");
}
TEST_CASE("two sockets with no link are an impossible topology", "[cli][bad]") {
  expect_rejected("topo tests/corpus/bad/topology_unlinked_sockets.yaml",
                  "topology_unlinked_sockets.yaml:5:5", "cpu1", "no link");
}
TEST_CASE("overlapping BAR windows are an impossible topology", "[cli][bad]") {
  expect_rejected("topo tests/corpus/bad/topology_overlapping_bars.yaml",
                  "topology_overlapping_bars.yaml:7:57", "bar1_address", "overlaps");
}
TEST_CASE("a link faster than its root port supports is rejected", "[cli][bad]") {
  expect_rejected("topo tests/corpus/bad/topology_gen_too_high.yaml",
                  "topology_gen_too_high.yaml:8:33", "gen", "Gen3");
}
TEST_CASE("a bad --set value names the --set", "[cli][bad]") {
  expect_rejected("run scenarios/default.yaml --set link.gpu0.gen=9", "--set link.gpu0.gen=9",
                  "gen", "expected an integer");
}
TEST_CASE("a --set path that selects nothing is an error", "[cli][bad]") {
  expect_rejected("run tests/data/scenarios/single_rc.yaml --set link.gpu7.gen=4",
                  "--set link.gpu7.gen=4", "gpu7", "");
}
TEST_CASE("a program step with an unknown call is rejected", "[cli][bad][program]") {
  expect_rejected("run tests/corpus/bad/program_unknown_call.yaml",
                  "program_unknown_call.yaml:9:26", "call", "unknown call 'cuMalloc'");
}
TEST_CASE("a program step naming a buffer no cuMemAlloc made is rejected", "[cli][bad][program]") {
  expect_rejected("run tests/corpus/bad/program_unknown_buffer.yaml",
                  "program_unknown_buffer.yaml:10:5", "buffer", "no buffer 'bufer'");
}
TEST_CASE("a program step of an undeclared process is rejected", "[cli][bad][program]") {
  expect_rejected("run tests/corpus/bad/program_unknown_process.yaml",
                  "program_unknown_process.yaml:8:15", "process", "no process 'ap'");
}
TEST_CASE("a peer driver on a device that is not a third-party DMA device is rejected",
          "[cli][bad][program]") {
  expect_rejected("run tests/corpus/bad/program_peer_not_dma.yaml",
                  "program_peer_not_dma.yaml:5:", "device", "not a third-party DMA device");
}
TEST_CASE("credits that cannot hold one MPS-sized TLP are rejected", "[cli][bad]") {
  expect_rejected("topo tests/corpus/bad/topology_credits_too_small.yaml",
                  "topology_credits_too_small.yaml:9:", "credits", "would deadlock");
}
TEST_CASE("a misspelt registration cache key is named with a hint", "[cli][bad][program]") {
  expect_rejected("run tests/corpus/bad/program_regcache_unknown_key.yaml",
                  "program_regcache_unknown_key.yaml:6:29", "polcy", "did you mean 'policy'");
}
TEST_CASE("an unknown eviction policy is rejected", "[cli][bad][program]") {
  expect_rejected("run tests/corpus/bad/program_regcache_policy.yaml",
                  "program_regcache_policy.yaml:6:37", "policy", "expected one of: lru, fifo");
}
TEST_CASE("max_entries must be an integer", "[cli][bad][program]") {
  expect_rejected("run tests/corpus/bad/program_regcache_max_entries.yaml",
                  "program_regcache_max_entries.yaml:6:42", "max_entries", "expected an integer");
}
TEST_CASE("a dma rate without a time unit is rejected", "[cli][bad][program]") {
  expect_rejected("run tests/corpus/bad/program_every_unit.yaml", "program_every_unit.yaml:10:72",
                  "every", "needs a unit");
}
TEST_CASE("a rate on a step that is not a dma is an unknown key", "[cli][bad][program]") {
  expect_rejected("run tests/corpus/bad/program_every_not_dma.yaml",
                  "program_every_not_dma.yaml:10:49", "every", "unknown key");
}
TEST_CASE("bar1 rejects bad scenario input as run does", "[cli][bad][bar1]") {
  expect_rejected("bar1 tests/corpus/bad/program_regcache_policy.yaml",
                  "program_regcache_policy.yaml:6:37", "policy", "expected one of");
}
