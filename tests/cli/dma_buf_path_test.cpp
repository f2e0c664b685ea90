// The registration cache and the third-party driver on both paths to GPU memory (GPUDirect
// RDMA 13.3, 4.1: dma-buf, the upstream one; chapters 5-6: nv-p2p), scenarios/dma_buf.yaml:
// the same DMAs, every byte checked, at the same rate; what a cuMemFree does differs.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_harness.h"

namespace {

struct outcome {
  int exit_code = 0;
  std::string out, err;
  nlohmann::json program;
};

outcome run(const std::string& path, bool tag_check) {
  const std::string file =
      std::string(P2PSIM_BUILD_DIR) + "/dma_buf_" + path + (tag_check ? "" : "_no_tag") + ".json";
  auto r = p2psim::test::run_cli("run scenarios/dma_buf.yaml --set peer_driver.path=" + path +
                                 " --set peer_driver.regcache.tag_check=" +
                                 (tag_check ? "true" : "false") + " --json " + file);
  outcome o{r.exit_code, r.out, r.err, {}};
  std::ifstream f(file);
  if (f) o.program = nlohmann::json::parse(f)["runs"][0]["program"];
  return o;
}

uint64_t used_bar1(const nlohmann::json& program) {
  return program["bar1"][0]["used_bytes"].get<uint64_t>();
}

}  // namespace

TEST_CASE(
    "dma-buf and nv-p2p move the same bytes at the same rate but freed memory stays "
    "mapped by dma-buf until the cache drops it",
    "[cli][dma-buf]") {
  const outcome db = run("dma_buf", true), nv = run("nv_p2p", true);
  INFO(db.err << nv.err);
  REQUIRE(db.exit_code == 0);
  REQUIRE(nv.exit_code == 0);
  CHECK(db.program["driver"]["pins"] == 0);
  CHECK(db.program["driver"]["dma_buf_exports"] == 3);  // a, b, and c at a's old address
  CHECK(db.program["driver"]["dma_buf_unmaps"] == 1);   // a's, once found stale (6.5)
  CHECK(nv.program["driver"]["pins"] == 3);
  CHECK(nv.program["driver"]["callbacks"] == 3);  // every free revokes its pin (5.3)
  REQUIRE(db.program["dma"].size() == nv.program["dma"].size());
  for (size_t i = 0; i < db.program["dma"].size(); ++i) {
    const auto &a = db.program["dma"][i], &b = nv.program["dma"][i];
    CHECK(a["bytes"] == b["bytes"]);
    CHECK(a["landed_bytes"] == a["bytes"]);
    CHECK(a["mismatched_bytes"] == 0);
    CHECK(b["mismatched_bytes"] == 0);
    CHECK(a["gbps"].get<double>() == Approx(b["gbps"].get<double>()).epsilon(0.001));
  }
  // After every buffer is freed nv-p2p has given BAR1 back; the imported dma-bufs still hold
  // b's and c's memory and mappings (4 MiB each), as the NVIDIA exporter keeps freed memory
  // for its importers.
  CHECK(used_bar1(db.program) == used_bar1(nv.program) + (8u << 20));
  CHECK(db.out.find("dma-buf: 3 exports, 3 maps and 1 unmaps") != std::string::npos);
}

TEST_CASE(
    "without the buffer-ID check a stale dma-buf entry sends the DMA into freed memory "
    "silently where nv-p2p refuses it",
    "[cli][dma-buf]") {
  const outcome db = run("dma_buf", false), nv = run("nv_p2p", false);
  CHECK(db.exit_code == 1);
  CHECK(db.out.find("to_c: 4194304 bytes differ between GPU memory and the device") !=
        std::string::npos);
  REQUIRE(db.program.contains("dma"));
  for (const auto& d : db.program["dma"])
    if (d["name"] == "to_c") {
      CHECK(d["landed_bytes"] == d["bytes"]);  // every byte landed: nothing refused it
      CHECK(d["failed_bytes"] == 0);
    }
  CHECK(nv.exit_code == 1);
  CHECK((nv.out + nv.err).find("step 9 (app dma) returned -EINVAL, expected ok") !=
        std::string::npos);
}

TEST_CASE(
    "dma-buf steps: exports refused as driver 580 refuses them and DMA through an "
    "imported region checked byte for byte before and after the free",
    "[cli][dma-buf]") {
  const std::string file = std::string(P2PSIM_BUILD_DIR) + "/dma_buf_steps.json";
  auto r = p2psim::test::run_cli("run tests/data/scenarios/dma_buf_steps.yaml --json " + file);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("Program: 21 steps, all as expected") != std::string::npos);
  std::ifstream f(file);
  const auto program = nlohmann::json::parse(f)["runs"][0]["program"];
  CHECK(program["driver"]["dma_buf_exports"] == 1);
  CHECK(program["driver"]["dma_buf_maps"] == 1);
  CHECK(program["driver"]["dma_buf_unmaps"] == 1);
  CHECK(program["driver"]["callbacks"] == 0);  // the free revoked nothing
  for (const auto& d : program["dma"]) {
    CHECK(d["mismatched_bytes"] == 0);
    if (d["name"] == "released") {
      CHECK(d["landed_bytes"] == 0);
    } else {
      CHECK(d["landed_bytes"] == 1048576);  // after_free too: into the memory the buffer had
    }
  }
}

// NVIDIA's exporter (nv-dmabuf.c) has no attach op and checks no P2P distance: the import
// succeeds on a root complex that answers peer-to-peer reads with Unsupported Request, and the
// reads fail on the fabric, as on such a machine.
TEST_CASE(
    "dma-buf: an import where the root complex refuses peer-to-peer reads succeeds and "
    "the reads are refused on the fabric",
    "[cli][dma-buf]") {
  const std::string file = std::string(P2PSIM_BUILD_DIR) + "/dma_buf_steps_arrow_lake.json";
  auto r = p2psim::test::run_cli(
      "run tests/data/scenarios/dma_buf_steps.yaml --set "
      "topology=../../../topologies/single_rc.yaml"
      " --set socket.cpu0.platform=arrow_lake --json " +
      file);
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("Program: 21 steps, all as expected") != std::string::npos);
  CHECK(r.out.find("ERROR: out: 1048576 of 1048576 bytes refused by the fabric") !=
        std::string::npos);
  std::ifstream f(file);
  const auto program = nlohmann::json::parse(f)["runs"][0]["program"];
  for (const auto& d : program["dma"])
    if (d["name"] == "in") CHECK(d["landed_bytes"] == 1048576);  // writes are routed
}
