// The command-line grammar every command shares: --version, output files that may be `-`
// (standard output, carrying that output alone), output paths checked before anything runs,
// and a file of another kind given where a scenario belongs.
#include <catch2/catch.hpp>

#include <pugixml.hpp>

#include "tests/cli/cli_harness.h"

using nlohmann::json;
using p2psim::test::run_cli;

TEST_CASE("p2psim --version names the simulator and its SystemC", "[cli][grammar]") {
  auto r = run_cli("--version");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.rfind("p2psim " P2PSIM_VERSION " (SystemC 2.", 0) == 0);
}

TEST_CASE("run --json - writes the JSON alone to standard output", "[cli][grammar]") {
  auto r = run_cli("run scenarios/default.yaml --json -");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(r.out);  // nothing but the JSON
  CHECK(j["scenario_file"] == "scenarios/default.yaml");
  CHECK(j["sim"]["tlps"].get<uint64_t>() > 0);
  CHECK(!j["bandwidth"].empty());
}

TEST_CASE("an output path that cannot be written is bad input before any run", "[cli][grammar]") {
  struct bad_output {
    const char* command;
    const char* message;
  };
  for (auto b : {
           bad_output{"run scenarios/default.yaml --json /nonexistent/x.json",
                      "error: --json: no folder /nonexistent to write /nonexistent/x.json in"},
           bad_output{"run scenarios/default.yaml --json tests",
                      "error: --json: tests is a folder"},
           bad_output{"p2p topologies/switch_two_pairs.yaml --json /nonexistent/p.json",
                      "error: --json: no folder /nonexistent"},
           bad_output{"bar1 scenarios/bar1_sizing.yaml --json /nonexistent/b.json",
                      "error: --json: no folder /nonexistent"},
           bad_output{"litmus scenarios/litmus/raw.yaml --junit /nonexistent/j.xml",
                      "error: --junit: no folder /nonexistent"},
           bad_output{"topo topologies/single_rc.yaml --dot /nonexistent/t.dot",
                      "error: --dot: no folder /nonexistent"},
           bad_output{"sweep scenarios/pix_bandwidth.yaml --vary link.gpu0.gen=3,4 --csv "
                      "/nonexistent/s.csv",
                      "error: --csv: no folder /nonexistent"},
           bad_output{"sweep scenarios/pix_bandwidth.yaml --vary link.gpu0.gen=3,4 --csv -",
                      "--csv: - (standard output) needs --dir DIR"},
           bad_output{"validate --rows h200_h2d_4mib --json /nonexistent/v.json",
                      "error: --json: no folder /nonexistent"},
       }) {
    auto r = run_cli(b.command);
    INFO(b.command << "\n" << r.out << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(b.message) != std::string::npos);
    CHECK(r.out.empty());  // refused before it simulated or printed anything
  }
}

TEST_CASE("a topology or litmus file given to run says what it is", "[cli][grammar]") {
  auto t = run_cli("run topologies/switch_only.yaml");
  INFO(t.err);
  CHECK(t.exit_code == 2);
  CHECK(t.err.find("topologies/switch_only.yaml:") == 0);
  CHECK(t.err.find("is a topology file, not a scenario: `p2psim topo "
                   "topologies/switch_only.yaml` shows it") != std::string::npos);
  auto l = run_cli("run scenarios/litmus/raw.yaml");
  INFO(l.err);
  CHECK(l.exit_code == 2);
  CHECK(l.err.find("is a litmus test, not a scenario: `p2psim litmus scenarios/litmus/raw.yaml` "
                   "runs it") != std::string::npos);
}

TEST_CASE("litmus --junit - writes the XML alone to standard output", "[cli][grammar]") {
  auto r = run_cli("litmus scenarios/litmus/raw.yaml --junit -");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  pugi::xml_document doc;
  REQUIRE(doc.load_string(r.out.c_str()));
  CHECK(doc.child("testsuites").child("testsuite").child("testcase"));
  CHECK(r.err.find("litmus: ") != std::string::npos);  // the report went to standard error
}

TEST_CASE("topo --dot - writes the DOT alone to standard output", "[cli][grammar]") {
  auto r = run_cli("topo topologies/single_rc.yaml --dot -");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.rfind("graph ", 0) == 0);
  CHECK(r.out.find("Topology ") == std::string::npos);
}

TEST_CASE("sweep --csv - writes the CSV alone to standard output", "[cli][grammar]") {
  const std::string dir = (std::filesystem::path(P2PSIM_BUILD_DIR) / "sweep_stdout.runs").string();
  std::filesystem::remove_all(dir);
  auto r =
      run_cli("sweep scenarios/pix_bandwidth.yaml --vary link.gpu0.gen=3,2 --csv - --dir " + dir);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.rfind("run,", 0) == 0);  // the header first
  CHECK(r.err.find("sweep: 2 runs, 0 failed") != std::string::npos);
}

TEST_CASE("run --seed sets the scenario's seed and the JSON says which", "[cli][grammar]") {
  auto r = run_cli("run scenarios/default.yaml --seed 7 --json -");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(json::parse(r.out)["seed"] == 7);
  auto d = run_cli("run scenarios/default.yaml --json -");
  REQUIRE(d.exit_code == 0);
  CHECK(json::parse(d.out)["seed"] == 1);  // the scenario's default
  CHECK(run_cli("run scenarios/default.yaml --seed x").exit_code == 2);
}

TEST_CASE("sweep --fidelity runs every point at that fidelity", "[cli][grammar]") {
  const auto dir = std::filesystem::path(P2PSIM_BUILD_DIR) / "sweep_fidelity.runs";
  std::filesystem::remove_all(dir);
  auto r = run_cli(
      "sweep scenarios/pix_bandwidth.yaml --vary link.gpu0.gen=3,2 --fidelity burst "
      "--csv - --dir " +
      dir.string());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  for (const char* run : {"0000", "0001"})
    CHECK(p2psim::test::read_json(
              (dir / "results" / (std::string(run) + ".json")).string())["sim"]["fidelity"] ==
          "burst");
  CHECK(run_cli("sweep scenarios/pix_bandwidth.yaml --vary link.gpu0.gen=3 --fidelity fast "
                "--csv -")
            .exit_code == 2);
}
