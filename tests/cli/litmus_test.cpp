// p2psim litmus as CI runs it: expectations, exit codes, JUnit XML, reproducibility from a
// seed, mutation of the ordering rules (every rule is needed by some test of the catalogue),
// and bad litmus files. The catalogue itself runs one ctest per file (tests/litmus).
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <pugixml.hpp>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

#include "tests/cli/cli_harness.h"

using p2psim::test::run_cli;

namespace {

// The outcome lines of a report, without timings.
std::string outcomes(const std::string& out) {
  std::istringstream in(out);
  std::string line, kept;
  while (std::getline(in, line))
    if (line.find("choices") != std::string::npos || line.find("runs") != std::string::npos)
      kept += line + "\n";
  return std::regex_replace(kept, std::regex(R"(\(\d+ runs, [0-9.]+ s\))"), "");
}

}  // namespace

TEST_CASE("MP with Relaxed Ordering shows flag new and data old in some runs", "[cli][litmus]") {
  auto r = run_cli("litmus scenarios/litmus/mp_ro_switch.yaml");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  // A starred outcome (it satisfies the condition): flag seen new, data not.
  CHECK(std::regex_search(r.out, std::regex(R"(\*\s+\d+\s+f=1 d=0)")));
}

TEST_CASE("MP without Relaxed Ordering never shows flag new and data old", "[cli][litmus]") {
  for (const char* f : {"mp_switch", "mp_rc", "mp_qpi", "mp_ro_data_only_switch"}) {
    auto r = run_cli(std::string("litmus scenarios/litmus/") + f + ".yaml");
    INFO(f << "\n" << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("f=1 d=0") == std::string::npos);
    CHECK(r.out.find("(every order)") != std::string::npos);  // every order was tried
  }
}

TEST_CASE("a litmus run is reproducible from its seed", "[cli][litmus]") {
  const std::string test = "litmus scenarios/litmus/kernel_concurrent_partial.yaml --runs 40";
  auto a = run_cli(test + " --seed 11"), b = run_cli(test + " --seed 11");
  INFO(a.out);
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  CHECK(a.out.find("(every order)") == std::string::npos);  // random runs, not exhaustive
  // How much of the tree they took: its orders seen, the tree's estimated size, the share.
  CHECK(std::regex_search(
      a.out,
      std::regex(R"(40 runs \(\d+ orders of about [0-9.]+( [kMGTP])?, (under )?[0-9.]+%\))")));
  CHECK(outcomes(a.out) == outcomes(b.out));
}

TEST_CASE(
    "the catalogue: enough tests in every order, and the lint names those that pass by "
    "timing alone",
    "[cli][litmus]") {
  // One `allowed` test of the GPU rules (guide 5.7) matches in a run that made no choice: the
  // RDMA write is still queued behind a slow link when the kernel launched after its
  // completion entry reads, so no rule turned off can make it fail. --lint fails it and nothing
  // else (DtoD.then-RDMA-read passed so too before how much of a copy has landed was a choice).
  // The reference model is checked by each file's own ctest (tests/litmus).
  auto r = run_cli("litmus scenarios/litmus --lint --min-exhaustive 168 --no-model");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  std::smatch m;
  REQUIRE(std::regex_search(r.out, m, std::regex(R"(failed, (\d+) in every order)")));
  CHECK(std::stoi(m[1]) >= 168);
  CHECK(r.out.find("--min-exhaustive asks") == std::string::npos);
  std::vector<std::string> linted;
  const std::regex failed_test(R"((\S+)  \([^)]*\)\n(?:  [^\n]*\n)*?  FAILED: --lint)");
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), failed_test);
       it != std::sregex_iterator(); ++it)
    linted.push_back((*it)[1]);
  CHECK(linted == std::vector<std::string>{"Launch.before-RDMA-lands"});
  CHECK(std::regex_search(r.out, std::regex(R"(195 tests, 194 passed, 1 failed)")));
}

TEST_CASE("a copy that returned early is seen stale or in part through exploration, not timing",
          "[cli][litmus]") {
  // guide 5.7: cuMemcpyDtoD without SYNC_MEMOPS returns once queued. At the default VRAM
  // bandwidth the copy is done before the device's read arrives; the explorer chooses how much
  // of it has landed (none, a part from its start, all: its 64 bytes are two sectors), so
  // each outcome comes from a choice.
  auto r = run_cli("litmus scenarios/litmus/dtod_then_rdma_read.yaml");
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("(every order)") != std::string::npos);
  CHECK(std::regex_search(r.out, std::regex(R"(\s+1  r=2\s+choices 0\n)")));
  CHECK(std::regex_search(r.out, std::regex(R"(\*\s+1  r=torn\s+choices 1\n)")));
  CHECK(std::regex_search(r.out, std::regex(R"(\*\s+1  r=0\s+choices 2\n)")));
}

TEST_CASE("a run with fewer tests in every order than --min-exhaustive asks for fails",
          "[cli][litmus]") {
  auto ok = run_cli("litmus scenarios/litmus/mp_ro_switch.yaml --min-exhaustive 1");
  INFO(ok.out);
  CHECK(ok.exit_code == 0);
  auto few = run_cli("litmus scenarios/litmus/mp_ro_switch.yaml --min-exhaustive 2");
  INFO(few.out);
  CHECK(few.exit_code == 1);
  CHECK(few.out.find("FAILED: 1 tests explored in every order, --min-exhaustive asks for 2") !=
        std::string::npos);
}

TEST_CASE("a replayed run gives the outcome its choices were printed with", "[cli][litmus]") {
  auto all = run_cli("litmus scenarios/litmus/mp_ro_switch.yaml");
  std::smatch m;
  REQUIRE(std::regex_search(all.out, m, std::regex(R"(\*\s+\d+\s+(f=1 d=0)\s+choices ([0-9.]+))")));
  auto one = run_cli("litmus scenarios/litmus/mp_ro_switch.yaml --choices " + m[2].str());
  INFO(one.out);
  CHECK(std::regex_search(one.out, std::regex(R"(\*\s+1\s+f=1 d=0)")));
}

TEST_CASE("a failed expectation exits 1 and is a JUnit failure", "[cli][litmus]") {
  const std::string xml = std::string(P2PSIM_BUILD_DIR) + "/litmus_junit.xml";
  auto r = run_cli(
      "litmus tests/data/litmus/failing.yaml scenarios/litmus/mp_ro_switch.yaml --junit " + xml);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("FAILED: allowed outcome never observed") != std::string::npos);
  pugi::xml_document doc;
  REQUIRE(doc.load_file(xml.c_str()));
  auto suite = doc.child("testsuites").child("testsuite");
  CHECK(suite.attribute("tests").as_int() == 2);
  CHECK(suite.attribute("failures").as_int() == 1);
  int failed = 0;
  for (auto tc : suite.children("testcase")) {
    if (tc.child("failure")) {
      ++failed;
      CHECK(std::string(tc.attribute("name").value()) == "wrong-expectation");
    }
  }
  CHECK(failed == 1);
  // Each case says how far its runs went through its tree of orders.
  for (auto tc : suite.children("testcase")) {
    std::map<std::string, std::string> props;
    for (auto p : tc.child("properties").children("property"))
      props[p.attribute("name").value()] = p.attribute("value").value();
    INFO(tc.attribute("name").value());
    CHECK(props.at("every_order") == "true");
    CHECK(props.at("explored_share") == "1");
    CHECK(props.at("orders_seen") == props.at("orders_estimated"));
    CHECK(props.at("orders_seen") == props.at("runs"));
  }
}

TEST_CASE("every rule is needed: turning it off fails litmus tests on two topology classes",
          "[cli][litmus][mutation]") {
  auto list = run_cli("litmus --list-rules");
  REQUIRE(list.exit_code == 0);
  std::istringstream in(list.out);
  std::string line;
  std::vector<std::string> rules;
  while (std::getline(in, line)) rules.push_back(line.substr(0, line.find(' ')));
  // One catalogue run per rule, a few at a time (each is a single-threaded process); each stops
  // once two tests on two topology classes failed.
  std::vector<p2psim::test::cli_result> results(rules.size());
  std::atomic<size_t> next = 0;
  std::vector<std::thread> workers;
  for (unsigned w = 0; w < std::max(2u, std::thread::hardware_concurrency()); ++w)
    workers.emplace_back([&] {
      for (size_t i; (i = next++) < rules.size();)
        results[i] = run_cli("litmus scenarios/litmus --mutation-score --mutate " + rules[i]);
    });
  for (auto& w : workers) w.join();
  for (size_t i = 0; i < rules.size(); ++i) {
    INFO("--mutate " << rules[i] << "\n" << results[i].out << results[i].err);
    CHECK(results[i].exit_code == 0);                              // killed
    CHECK(results[i].out.find(" covered ") != std::string::npos);  // on two classes
  }
  CHECK(rules.size() >= 21);
}

TEST_CASE("an unknown rule for --mutate is bad input", "[cli][litmus]") {
  auto r = run_cli("litmus scenarios/litmus/raw.yaml --mutate P-Q");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("no ordering rule named 'P-Q'") != std::string::npos);
}

TEST_CASE("bad litmus files are rejected with file and line", "[cli][litmus]") {
  struct bad {
    const char* file;
    const char* message;
  };
  for (auto b : {bad{"litmus_unknown_key.yaml:11:", "unknown key 'valeu'"},
                 bad{"litmus_condition.yaml:12:", "expected == or !="},
                 bad{"litmus_kernel_host.yaml:11:", "a kernel agent reads and writes GPU memory"},
                 bad{"litmus_register_twice.yaml:12:", "register 'r' is already written"},
                 bad{"litmus_atomic_size.yaml:11:", "an AtomicOp's location holds 4 or 8 bytes"},
                 bad{"litmus_read_into.yaml:12:", "is not in the agent's own memory (nic0)"},
                 bad{"litmus_variant.yaml:14:", "a variant is RO or IDO, not 'NS'"}}) {
    std::string f(b.file);
    auto r = run_cli("litmus tests/corpus/bad/" + f.substr(0, f.find(':')));
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(f) != std::string::npos);
    CHECK(r.err.find(b.message) != std::string::npos);
  }
}

TEST_CASE("the runs are held to the reference model: its allowed outcomes and what was reached",
          "[cli][litmus][reference]") {
  // MP+RO.switch: the spec allows the flag to pass the data (P-P:RO) and every other mix; the
  // runs reach some of them, and none outside.
  auto r = run_cli("litmus scenarios/litmus/mp_ro_switch.yaml");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  std::smatch m;
  REQUIRE(std::regex_search(
      r.out, m, std::regex(R"(model: (\d+) outcomes allowed \((\d+) states\), (\d+) reached)")));
  CHECK(std::stoi(m[1]) >= 2);
  CHECK(std::stoi(m[3]) >= 2);
  CHECK(std::stoi(m[3]) <= std::stoi(m[1]));
  CHECK(r.out.find("OUTSIDE") == std::string::npos);
}

TEST_CASE("a test whose expectation rests on timing must say so, and only then",
          "[cli][litmus][reference]") {
  // The spec lets the flag of a second requester land before the first requester's data: the
  // runs pass by timing, the model does not meet `forbidden`.
  auto unstated = run_cli("litmus tests/data/litmus/timing_unstated.yaml");
  INFO(unstated.out << unstated.err);
  CHECK(unstated.exit_code == 1);
  CHECK(unstated.out.find("FAILED: the reference model's outcomes do not meet the expectation") !=
        std::string::npos);
  CHECK(unstated.out.find("not reached: f=1 d=0") != std::string::npos);
  // The catalogue's copy states its premise and passes.
  auto stated = run_cli("litmus scenarios/litmus/mp_two_requesters.yaml");
  INFO(stated.out);
  CHECK(stated.exit_code == 0);
  CHECK(stated.out.find("the expectation rests on timing: the flag is sent 1 us after") !=
        std::string::npos);
  // A premise nothing rests on is an error too.
  auto needless = run_cli("litmus tests/data/litmus/timing_needless.yaml");
  INFO(needless.out);
  CHECK(needless.exit_code == 1);
  CHECK(needless.out.find("`timing:` given, but the reference model meets the expectation") !=
        std::string::npos);
}

TEST_CASE("litmus explain: an execution that reaches an outcome, or the rules that forbid it",
          "[cli][litmus][reference]") {
  // MP+RO.switch: the flag passes the data by P-P:RO in the switch's queue to the GPU.
  auto allowed = run_cli("litmus scenarios/litmus/mp_ro_switch.yaml --explain condition");
  INFO(allowed.out << allowed.err);
  REQUIRE(allowed.exit_code == 0);
  CHECK(allowed.out.find("f=1 d=0: allowed; one execution:") != std::string::npos);
  CHECK(std::regex_search(
      allowed.out,
      std::regex(R"(nic's write of flag leaves sw0>gpu0 ahead of \d+ older \(P-P:RO\))")));
  CHECK(allowed.out.find("kernel: sees flag = 1") != std::string::npos);
  // RAW+IDO.switch: the read of x cannot pass its own requester's write of x (NPR-P a; IDO
  // needs another requester).
  auto forbidden = run_cli("litmus scenarios/litmus/raw_ido_read.yaml --explain r=0");
  INFO(forbidden.out);
  REQUIRE(forbidden.exit_code == 0);
  CHECK(forbidden.out.find("r=0: forbidden\n    by NPR-P: without it, r=0 is allowed:") !=
        std::string::npos);
}

TEST_CASE("every allowed outcome a test run in every order does not reach is explained",
          "[cli][litmus][reference]") {
  // NPR-NPR.may-pass without its `unreached:` entry: the model allows both reads to see the
  // same value; the kernel's timed write keeps every run from it.
  auto unstated = run_cli("litmus tests/data/litmus/unreached_unstated.yaml");
  INFO(unstated.out << unstated.err);
  CHECK(unstated.exit_code == 1);
  CHECK(unstated.out.find("FAILED: every order was run and the model allows 2 outcome(s) no run "
                          "reached (r0=0 r1=0, r0=1 r1=1)") != std::string::npos);
  // The catalogue's copy says why, and the report shows it.
  auto stated = run_cli("litmus scenarios/litmus/read_may_pass_read.yaml");
  INFO(stated.out);
  CHECK(stated.exit_code == 0);
  CHECK(stated.out.find("not reached: r0=0 r1=0 (the kernel writes x 4940 ns in") !=
        std::string::npos);
  // An entry for an outcome the runs reach is refused.
  auto reached = run_cli("litmus tests/data/litmus/unreached_but_reached.yaml");
  INFO(reached.out);
  CHECK(reached.exit_code == 1);
  CHECK(reached.out.find("FAILED: `unreached:` names outcome(s) the runs reached: f=1 d=1") !=
        std::string::npos);
}
