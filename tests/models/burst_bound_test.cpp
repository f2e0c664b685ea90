// Burst fidelity never beats the physics: a 1 MiB P2P write between the devices of one
// switch (the 8-GPU matrix cut to gpu0, gpu1 and nic0, every pair alone) is no faster at
// burst fidelity than the analytic limit of its Gen3 x16 links, and within 1% of TLP
// fidelity. A burst's DLLPs go between its TLPs: charged after its last one, they let the
// last burst land early by all of them (about 0.48 us of a 64 KiB burst, 0.5% of 1 MiB).
// SystemC elaborates once per process, so the TLP-fidelity run is a forked child's, which
// reports its figures through a pipe.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "models/pcie/link_timing.h"
#include "tests/models/harness.h"

namespace {

std::vector<std::string> matrix_sets(const std::string& fidelity) {
  return {"matrix.devices=[gpu0, gpu1, nic0]", "matrix.size=1MiB", "fidelity=" + fidelity};
}

// Each pair's bandwidth, by transfer name, in this process.
std::map<std::string, double> run_matrix(const std::string& fidelity) {
  auto r = p2psim::test::run_scenario("scenarios/bench/matrix_8gpu.yaml", matrix_sets(fidelity));
  std::map<std::string, double> gbps;
  for (const auto& b : r.bandwidth) {
    CHECK(b.mismatched_bytes == 0);
    CHECK(b.failed_bytes == 0);
    gbps[b.transfer] = b.gbps;
  }
  return gbps;
}

// The same, in a forked child (its own SystemC elaboration): "name gbps" lines.
std::map<std::string, double> run_matrix_in_child(const std::string& fidelity) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    std::ostringstream out;
    out.precision(17);
    int code = 0;
    try {
      auto r =
          p2psim::test::run_scenario("scenarios/bench/matrix_8gpu.yaml", matrix_sets(fidelity));
      for (const auto& b : r.bandwidth) out << b.transfer << ' ' << b.gbps << '\n';
    } catch (...) {
      code = 1;
    }
    const std::string s = out.str();
    for (size_t done = 0; done < s.size();) {
      const ssize_t n = write(fds[1], s.data() + done, s.size() - done);
      if (n <= 0) _exit(2);
      done += size_t(n);
    }
    close(fds[1]);
    _exit(code);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
  close(fds[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  std::map<std::string, double> gbps;
  std::istringstream in(text);
  std::string name;
  double v = 0;
  while (in >> name >> v) gbps[name] = v;
  return gbps;
}

}  // namespace

TEST_CASE("burst fidelity: a 1 MiB write matrix within the analytic limit and 1% of TLP",
          "[bandwidth][burst]") {
  const auto tlp = run_matrix_in_child("tlp");  // before this process elaborates
  const auto burst = run_matrix("burst");
  REQUIRE(tlp.size() == 6);  // 3 devices: every ordered pair
  REQUIRE(burst.size() == tlp.size());
  const double limit = p2psim::pcie::analytic_write_gbs(3, 16, 256, 1 << 20);
  for (const auto& [name, t] : tlp) {
    REQUIRE(burst.count(name) == 1);
    const double b = burst.at(name);
    INFO(name << ": burst " << b << " GB/s, TLP " << t << " GB/s, analytic " << limit << " GB/s");
    CHECK(b <= limit);
    CHECK(b == Approx(t).epsilon(0.01));
  }
}
