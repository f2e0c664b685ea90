// p2psim sweep and p2psim plot as an architect runs them: a sweep of 8 runs gives the same
// CSV one or two at a time, a failed run is reported with its parameters while the others
// finish, the Slurm job array run task by task collects into the same CSV, and the CSV plots.
#include <catch2/catch.hpp>
#include <filesystem>
#include <pugixml.hpp>

#include "tests/cli/cli_harness.h"

using p2psim::test::read_text;
using p2psim::test::run_cli;
namespace fs = std::filesystem;

namespace {

const std::string vary =
    "scenarios/pix_bandwidth.yaml --vary link.gpu0.gen=1,2,3,4 --vary pcie.mps=128B,256B";

std::string in_build(const std::string& name) {
  fs::path p = fs::path(P2PSIM_BUILD_DIR) / name;
  fs::remove_all(p);
  fs::remove_all(p.string() + ".runs");
  return p.string();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("sweep: 8 runs give the same CSV one and two at a time", "[cli][sweep]") {
  const std::string one = in_build("sweep_jobs1.csv"), two = in_build("sweep_jobs2.csv");
  auto r1 = run_cli("sweep " + vary + " --jobs 1 --csv " + one);
  auto r2 = run_cli("sweep " + vary + " --jobs 2 --csv " + two);
  INFO(r1.out << r1.err << r2.out << r2.err);
  REQUIRE(r1.exit_code == 0);
  REQUIRE(r2.exit_code == 0);
  const std::string csv = read_text(one);
  CHECK(csv == read_text(two));
  CHECK(csv.rfind("run,link.gpu0.gen,pcie.mps,topology,transfer,src,dst,op,metric,value\n", 0) ==
        0);
  CHECK(count(csv, ",gbps,") == 16);  // 8 runs, a write and a read each
  CHECK(count(csv, ",exit_code,0\n") == 8);
  CHECK(csv.find("7,4,256B,switch_only,write,nic0,gpu0,write,gbps,") != std::string::npos);
  // Each run's JSON is kept beside the CSV.
  CHECK(fs::exists(one + ".runs/results/0007.json"));
  CHECK(fs::exists(one + ".runs/sweep.json"));
}

TEST_CASE("sweep: a failed run is reported with its parameters and the others finish",
          "[cli][sweep]") {
  const std::string csv = in_build("sweep_failed.csv");
  auto r = run_cli("sweep scenarios/pix_bandwidth.yaml --vary link.gpu0.gen=3,9,4 --jobs 2 --csv " +
                   csv);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("run 1 (link.gpu0.gen=9) failed with exit 2") != std::string::npos);
  CHECK(r.err.find("expected an integer from 1 to 5") != std::string::npos);
  const std::string text = read_text(csv);
  CHECK(text.find("1,9,,,,,,exit_code,2\n") != std::string::npos);
  CHECK(count(text, ",gbps,") == 4);  // the two good runs
  CHECK(r.out.find("3 runs, 1 failed") != std::string::npos);
}

TEST_CASE("sweep: the Slurm job array run task by task collects into the local CSV",
          "[cli][sweep][slurm]") {
  const std::string local = in_build("sweep_local.csv"), dir = in_build("sweep_slurm"),
                    merged = in_build("sweep_merged.csv");
  REQUIRE(run_cli("sweep " + vary + " --jobs 2 --csv " + local).exit_code == 0);
  auto e = run_cli("sweep " + vary + " --emit-slurm " + dir);
  INFO(e.out << e.err);
  REQUIRE(e.exit_code == 0);
  CHECK(e.out.find("sbatch " + dir + "/sweep.sbatch") != std::string::npos);
  const std::string script = read_text(dir + "/sweep.sbatch");
  CHECK(script.find("#SBATCH --array=0-7") != std::string::npos);
  CHECK(fs::exists(dir + "/args/0007.args"));
  auto partial = run_cli("sweep --collect " + dir + " --csv " + merged);
  CHECK(partial.exit_code == 1);  // nothing ran yet
  CHECK(partial.out.find("8 not finished") != std::string::npos);
  for (int task = 0; task < 8; ++task) {
    std::string cmd =
        "SLURM_ARRAY_TASK_ID=" + std::to_string(task) + " bash " + dir + "/sweep.sbatch";
    CHECK(std::system(cmd.c_str()) == 0);
  }
  auto c = run_cli("sweep --collect " + dir + " --csv " + merged);
  INFO(c.out << c.err);
  CHECK(c.exit_code == 0);
  CHECK(read_text(merged) == read_text(local));
}

TEST_CASE("sweep: bad --vary and missing arguments are bad input", "[cli][sweep]") {
  auto r = run_cli("sweep scenarios/pix_bandwidth.yaml --vary link.gpu0.gen --csv x.csv");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--vary: 'link.gpu0.gen' is not key=value1,value2") != std::string::npos);
  auto twice = run_cli("sweep scenarios/pix_bandwidth.yaml --vary a=1 --vary a=2 --csv x.csv");
  CHECK(twice.exit_code == 2);
  CHECK(twice.err.find("a is varied twice") != std::string::npos);
  auto no_csv = run_cli("sweep scenarios/pix_bandwidth.yaml --vary pcie.mps=128B");
  CHECK(no_csv.exit_code == 2);
  CHECK(no_csv.err.find("needs --csv FILE") != std::string::npos);
  auto not_dir = run_cli("sweep --collect scenarios --csv x.csv");
  CHECK(not_dir.exit_code != 0);
  CHECK(not_dir.err.find("no sweep.json") != std::string::npos);
}

TEST_CASE("plot: a sweep CSV becomes an SVG with one line per value", "[cli][plot]") {
  const std::string csv = in_build("plot_src.csv"), svg = in_build("plot.svg");
  REQUIRE(run_cli("sweep " + vary + " --jobs 2 --csv " + csv).exit_code == 0);
  auto r = run_cli("plot " + csv +
                   " --x link.gpu0.gen --y gbps --by pcie.mps --where transfer=write -o " + svg);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("2 line(s), 8 points") != std::string::npos);
  pugi::xml_document doc;
  REQUIRE(doc.load_file(svg.c_str()));
  CHECK(std::string(doc.first_child().name()) == "svg");
  const std::string text = read_text(svg);
  CHECK(text.find("pcie.mps=128B") != std::string::npos);
  CHECK(text.find("pcie.mps=256B") != std::string::npos);
  auto ambiguous = run_cli("plot " + csv + " --x link.gpu0.gen --y gbps -o " + svg);
  CHECK(ambiguous.exit_code == 2);
  CHECK(ambiguous.err.find("narrow them with --where") != std::string::npos);
  auto unknown = run_cli("plot " + csv + " --x gen --y gbps -o " + svg);
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.find("--x 'gen' is not a column") != std::string::npos);
}

TEST_CASE("sweep: a list value of --vary is one point of the sweep", "[cli][sweep]") {
  const std::string csv = in_build("sweep_lists.csv");
  auto r = run_cli(
      "sweep scenarios/default.yaml --vary "
      "'topologies=[../topologies/single_rc.yaml],[../topologies/switch_only.yaml]' --csv " +
      csv);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("sweep: 2 runs, 0 failed") != std::string::npos);
  const std::string text = p2psim::test::read_text(csv);
  CHECK(text.find("0,[../topologies/single_rc.yaml],single_rc,") != std::string::npos);
  CHECK(text.find("1,[../topologies/switch_only.yaml],switch_only,") != std::string::npos);
}
