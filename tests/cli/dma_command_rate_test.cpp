// A DMA engine that moves each command's read data into its memory at a fixed rate
// (docs/architecture.md, "Device-side data rate"), on the NFP-6000 preset: what it adds to a
// read, the same at both fidelities, and many commands side by side.
#include <catch2/catch.hpp>

#include <map>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_harness.h"

using nlohmann::json;
using p2psim::test::in_build;
using p2psim::test::read_json;
using p2psim::test::run_cli;
using p2psim::test::seconds_by_transfer;

namespace {

// cross_qpi's Skylake-SP sockets complete host reads in 64 B pieces, so the first piece of
// every read is whole as early as a 64 B read's, and the card's move is all that differs.
const std::string machine = " --set link.nic0.width=8";
constexpr double rate = 3.38e9;  // the preset's command_rate, bytes per second

// Each transfer's time in seconds.
std::map<std::string, double> read_seconds(const std::string& sets, const std::string& tag) {
  const std::string file = in_build("nfp_reads_" + tag + ".json");
  auto r = run_cli("run tests/data/scenarios/nfp_reads.yaml" + machine + sets + " --json " + file);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const auto t = seconds_by_transfer(read_json(file));
  REQUIRE(t.size() == 5);
  return t;
}

}  // namespace

TEST_CASE("command rate: a read ends when the card has moved its data, at both fidelities",
          "[cli][dma]") {
  const auto card = read_seconds(" --set device.nic0.model=nfp6000", "tlp");
  const auto burst = read_seconds(" --set device.nic0.model=nfp6000 --fidelity burst", "burst");
  const auto plain = read_seconds("", "plain");
  for (const auto& [name, seconds] : card) {
    INFO(name);
    CHECK(burst.at(name) == Approx(seconds).epsilon(0.01));
  }
  // 2 KiB is one command: beyond a 64 B read it takes the move of 1984 B more, since the
  // card moves data slower than 64 B completions cross a Gen3 x8 link. Without the card's
  // move the link alone adds much less.
  const double more_2k = 1984 / rate;
  CHECK(card.at("read_2k") - card.at("read_64") == Approx(more_2k).epsilon(0.03));
  CHECK(plain.at("read_2k") - plain.at("read_64") < 0.7 * more_2k);
  // 6244 B is two commands, 4 KiB and 2148 B, moved side by side: longer than the first
  // one's move, shorter than moving all of it in one.
  CHECK(card.at("read_odd") - card.at("read_64") > (4096 - 64) / rate);
  CHECK(card.at("read_odd") - card.at("read_64") < (6244 - 64) / rate);
  // 4160 B: the 64 B tail, a command of its own, is in the card's memory long before the
  // first command's 4 KiB: the read ends with the latter.
  CHECK(card.at("read_tail") - card.at("read_64") > (4096 - 64) / rate);
  // 1 MiB moves as 256 commands side by side: the link, not one command's rate, limits it.
  const double gbs_1m = (1 << 20) / card.at("read_1m") / 1e9;
  CHECK(gbs_1m > 1.5 * rate / 1e9);
  CHECK(card.at("read_1m") == Approx(plain.at("read_1m")).epsilon(0.01));
}
