// RDMA registration through nvidia-peermem in a program (guide 6.7; docs/formats-scenario.md,
// "RDMA registration"): scenarios/peermem.yaml, an RDMA NIC receiving remote writes into
// registered GPU buffers while the application frees one, and
// tests/data/scenarios/peermem_legacy.yaml, the persistent client on a driver before R535.
// Every byte a remote access moved is checked where the region's pages put it.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_harness.h"

namespace {

nlohmann::json program_of(const std::string& file) {
  std::ifstream f(file);
  return nlohmann::json::parse(f)["runs"][0]["program"];
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE(
    "peermem steps: remote writes land in registered buffers and a free invalidates the "
    "region after the write in flight ends and refuses every later access (guide 5.3 6.7)",
    "[cli][peermem]") {
  const std::string file = std::string(P2PSIM_BUILD_DIR) + "/peermem.json";
  auto r = p2psim::test::run_cli("run scenarios/peermem.yaml --json " + file);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("Program: 32 steps, all as expected") != std::string::npos);
  const auto program = program_of(file);
  const auto& rdma = program["rdma"];
  CHECK(rdma["registrations"] == 3);              // a, b, and a part of b
  CHECK(rdma["refused_registrations"] == 2);      // host memory; the persistent client since R535
  CHECK(rdma["invalidations"] == 2);              // both regions on b, by cuMemFree(b)
  CHECK(rdma["invalidations_that_waited"] == 1);  // for the write under way
  CHECK(rdma["deregistrations"] == 3);
  CHECK(rdma["refused_accesses"] == 4);  // past a region's end, twice after the free, after dereg
  CHECK(program["driver"]["callbacks"] == 2);
  for (const auto& d : program["dma"]) {
    INFO(d["name"]);
    CHECK(d["mismatched_bytes"] == 0);
    CHECK(d["into_freed_bytes"] == 0);
    CHECK(d["landed_bytes"] == d["bytes"]);
    CHECK(d["access_errors"] == (d["bytes"] == 0 ? 1 : 0));
    if (d["name"] == "to_b_in_flight") CHECK(d["landed_bytes"] == 4 << 20);  // whole, then freed
  }
}

TEST_CASE(
    "peermem steps before R535: the persistent client's region outlives cuMemFree and the "
    "writes into the freed memory are an error of the run (guide 4.2)",
    "[cli][peermem]") {
  const std::string file = std::string(P2PSIM_BUILD_DIR) + "/peermem_legacy.json";
  auto r = p2psim::test::run_cli("run tests/data/scenarios/peermem_legacy.yaml --json " + file);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("Program: 17 steps, all as expected") != std::string::npos);
  // The one error: the allocation made after the free kept its bytes (cuMemcpyDtoH checks).
  CHECK(count(r.out + r.err, "ERROR:") == 1);
  CHECK((r.out + r.err)
            .find("after_free: 1048576 bytes written into memory the program had "
                  "freed: the memory region outlived its buffer") != std::string::npos);
  const auto program = program_of(file);
  CHECK(program["rdma"]["registrations"] == 3);
  CHECK(program["rdma"]["invalidations"] == 2);    // nv_mem's region on a; mr_b at the exit
  CHECK(program["rdma"]["deregistrations"] == 3);  // two by the program, mr_b by the exit
  // Every pin is gone: the persistent one by its deregistration, b's by the exit.
  CHECK(program["driver"]["pins"].get<int>() ==
        program["driver"]["unpins"].get<int>() + program["driver"]["callbacks"].get<int>());
  for (const auto& d : program["dma"]) {
    INFO(d["name"]);
    CHECK(d["mismatched_bytes"] == 0);
    CHECK(d["into_freed_bytes"] == (d["name"] == "after_free" ? 1 << 20 : 0));
  }
}
