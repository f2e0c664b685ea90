// Peer access between GPUs through the CUDA API (docs/driver-model.md, "Peer access"): a copy
// between two GPUs is staged through host memory until the copying context has peer access,
// then goes GPU to GPU over the fabric at what the path carries; whether a GPU may reach
// another follows the platform's peer-to-peer routing. The run checks every byte copied.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "models/pcie/link_timing.h"
#include "tests/cli/cli_harness.h"

using p2psim::test::in_build;
using p2psim::test::read_json;
using p2psim::test::run_cli;

namespace {
const char* scenario = "tests/data/scenarios/cuda_peer_copies.yaml";
}  // namespace

TEST_CASE("CUDA peer access: a copy goes GPU to GPU once the context has access", "[cli][cuda]") {
  const std::string file = in_build("cuda_peer_copies.json");
  auto r = run_cli(std::string("run ") + scenario + " --json " + file);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);  // every step as expected, every byte read back checked
  double staged = 0, direct = 0;
  const nlohmann::json run = read_json(file);
  for (const auto& b : run["bandwidth"]) {
    if (b["transfer"] == "staged") staged = b["gbps"].get<double>();
    if (b["transfer"] == "direct") direct = b["gbps"].get<double>();
  }
  // Through the switch both GPUs share, the copy runs at the limit of their Gen3 x16 links
  // (the analytic model of posted writes at MPS 256 B), within 1% (its first TLP's way and
  // its last's), never above it. These GPUs have no CUDA copy costs.
  const double limit = p2psim::pcie::analytic_write_gbs(3, 16, 256, 16 << 20);
  CHECK(direct <= limit);
  CHECK(direct > 0.99 * limit);
  // Staged, the bytes cross the links twice, one DMA after the other: half of that or less.
  CHECK(staged <= 0.5 * limit);
  CHECK(staged > 0.45 * limit);
}

TEST_CASE("CUDA peer access: a platform that does not route peer reads refuses it", "[cli][cuda]") {
  // arrow_lake answers P2P reads between root ports with Unsupported Request, so gpu0 may not
  // reach gpu2 (each below a root port of its own): enabling access fails as libcuda does.
  auto r = run_cli(std::string("run ") + scenario +
                   " --set socket.cpu0.platform=arrow_lake --set socket.cpu1.platform=arrow_lake"
                   " --set program.c1.device=gpu2");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  const std::string all = r.out + r.err;
  CHECK(all.find("cuda_peer_copies.yaml:17:5: step 8 (app cuCtxEnablePeerAccess) returned "
                 "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, expected ok") != std::string::npos);
  // The copies still ran, staged, and their bytes were right: only the expectations failed.
  CHECK(all.find("differ") == std::string::npos);
}

TEST_CASE("CUDA peer access: a context name must come from an earlier cuCtxCreate", "[cli][cuda]") {
  auto r = run_cli("run tests/corpus/bad/program_unknown_context.yaml");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("no context 'c9' was named by an earlier cuCtxCreate") != std::string::npos);
}

TEST_CASE("CUDA peer access behind a translating IOMMU: granted, and the direct copy faults",
          "[cli][cuda]") {
  // As on real machines with the IOMMU on: cuCtxEnablePeerAccess succeeds (the fabric routes
  // P2P), but the switch redirects the peer writes to the root complex (ACS, which Linux turns
  // on with the IOMMU) and the IOMMU, which maps no peer BAR for the GPU, drops them. Copies
  // through host memory work: the driver maps its staging buffers for the GPU.
  auto r = run_cli(std::string("run ") + scenario + " --set socket.cpu0.iommu.mode=translating");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  const std::string all = r.out + r.err;
  CHECK(all.find("cuMemcpy: a device to device copy of 16777216 bytes on gpu0 lost 16777216 "
                 "bytes on the fabric") != std::string::npos);
  CHECK(all.find("cuMemcpyDtoH of y read") != std::string::npos);  // the bytes never came
  CHECK(all.find("step 8 (app cuCtxEnablePeerAccess) returned") == std::string::npos);
}
