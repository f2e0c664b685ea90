// Every malformed input in tests/corpus/bad goes through the CLI as its expect line says
// (tests/corpus/bad/README.md) and must be refused cleanly: exit code 2 and a message naming
// the file and line and saying what is wrong; never a crash, a hang, an internal error or a
// sanitizer report.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "tests/cli/cli_harness.h"

namespace {

namespace fs = std::filesystem;

const std::string k_dir = "tests/corpus/bad";

struct expectation {
  std::string command, location, words;
};

std::string trim(const std::string& s) {
  const char* space = " \t\r";
  size_t b = s.find_first_not_of(space), e = s.find_last_not_of(space);
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The inputs: every file of the folder but the README and the sidecars. Files in subfolders
// are only reached through these (a preset, a topology a scenario names).
std::vector<std::string> corpus_files() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(fs::path(P2PSIM_SOURCE_DIR) / k_dir)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && name != "README.md" && !ends_with(name, ".expect"))
      out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// "expect: COMMAND | LOCATION | WORDS" from the sidecar NAME.expect if there is one, else from
// the file's first line (its second after an XML declaration).
std::optional<expectation> read_expectation(const std::string& name) {
  const fs::path file = fs::path(P2PSIM_SOURCE_DIR) / k_dir / name;
  std::ifstream in(
      fs::exists(file.string() + ".expect") ? file.string() + ".expect" : file.string(),
      std::ios::binary);
  std::string line;
  std::getline(in, line);
  if (line.rfind("<?xml", 0) == 0) std::getline(in, line);
  const size_t at = line.find("expect:");
  if (at == std::string::npos) return std::nullopt;
  std::string rest = trim(line.substr(at + 7));
  if (ends_with(rest, "-->")) rest = trim(rest.substr(0, rest.size() - 3));
  const size_t bar1 = rest.find('|'), bar2 = rest.find('|', bar1 + 1);
  if (bar1 == std::string::npos || bar2 == std::string::npos) return std::nullopt;
  return expectation{trim(rest.substr(0, bar1)), trim(rest.substr(bar1 + 1, bar2 - bar1 - 1)),
                     trim(rest.substr(bar2 + 1))};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("corpus: every malformed input exits 2 naming its file and line", "[cli][bad][corpus]") {
  const std::vector<std::string> files = corpus_files();
  // So that the corpus cannot shrink unnoticed (a lost file would just be one test fewer).
  REQUIRE(files.size() >= 40);
  for (const auto& name : files) {
    DYNAMIC_SECTION("corpus file " << name) {
      const std::optional<expectation> want = read_expectation(name);
      if (!want) FAIL(name << ": no 'expect: COMMAND | LOCATION | WORDS' line (see README.md)");
      // A file name with a line, and optionally a column: "x.yaml:4", "x.yaml:4:", "x.xml:4:7".
      CHECK(std::regex_match(want->location, std::regex(R"([\w.-]+\.(yaml|xml|txt):\d+(:\d*)?)")));
      CHECK_FALSE(want->words.empty());

      const std::string cmd = want->command + " " + k_dir + "/" + name;
      auto r = p2psim::test::run_cli(cmd, 120);
      INFO("p2psim " << cmd << "\nexit code " << r.exit_code << "\nstderr:\n" << r.err);
      CHECK(r.exit_code != 124);  // timeout(1): the command hung
      CHECK(r.exit_code == 2);
      CHECK(contains(r.err, want->location));
      CHECK(contains(r.err, want->words));
      CHECK_FALSE(contains(r.err, "internal error"));
      // What AddressSanitizer, LeakSanitizer and UBSan print, in a sanitizer build.
      CHECK_FALSE(contains(r.err, "Sanitizer"));
      CHECK_FALSE(contains(r.err, "runtime error:"));
    }
  }
}

TEST_CASE("corpus: every sidecar belongs to an input", "[cli][bad][corpus]") {
  for (const auto& e : fs::directory_iterator(fs::path(P2PSIM_SOURCE_DIR) / k_dir)) {
    const std::string path = e.path().string();
    if (!ends_with(path, ".expect")) continue;
    INFO(path);
    CHECK(fs::is_regular_file(path.substr(0, path.size() - 7)));
  }
}
