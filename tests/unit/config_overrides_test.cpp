// --set overrides: parsing, path walking, and where their errors point.
#include <catch2/catch.hpp>

#include "sim/config/overrides.h"

using namespace p2psim::config;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;

namespace {

template <class F>
error error_of(F&& f) {
  try {
    f();
  } catch (const error& e) {
    return e;
  }
  FAIL("expected a config::error");
  throw std::logic_error("unreachable");
}

const char* k_text =
    "pcie: {mps: 256B}\n"
    "links:\n"
    "  - {up: cpu0, down: sw0, gen: 3}\n"
    "  - {up: sw0, down: gpu0, gen: 3}\n"
    "devices:\n"
    "  - {name: gpu0, bar1: 256MiB}\n"
    "  - {name: nic0}\n";

override_rules rules() {
  return {{{"link", "links"}, {"device", "devices"}}, {{"links", "down"}}};
}

}  // namespace

TEST_CASE("overrides: parse_override splits at the first '='", "[config][overrides]") {
  override_spec s = parse_override("link.gpu0.gen=4");
  CHECK(s.path == "link.gpu0.gen");
  CHECK(s.value == "4");
  CHECK(s.text == "link.gpu0.gen=4");
  CHECK(parse_override("a=b=c").value == "b=c");
  CHECK(parse_override("a=").value.empty());
  CHECK_THAT(error_of([] { parse_override("link.gpu0.gen"); }).what(),
             Equals("--set link.gpu0.gen: error: expected key=value, e.g. link.gpu0.gen=4"));
  CHECK_THAT(error_of([] { parse_override("=4"); }).what(), Contains("key before '=' is empty"));
  CHECK_THAT(error_of([] { parse_override("a..b=4"); }).what(), Contains("empty segment"));
}

TEST_CASE("overrides: set existing values and select list elements by key field",
          "[config][overrides]") {
  document d = document::parse(k_text, "t.yaml");
  apply_override(d, parse_override("link.gpu0.gen=4"), rules());
  apply_override(d, parse_override("device.nic0.bar0=1MiB"), rules());
  apply_override(d, parse_override("device.0.bar1=512MiB"), rules());
  apply_override(d, parse_override("pcie.mps=512B"), rules());
  auto links = d.root().list("links");
  CHECK(links[1].integer("gen", 1, 5) == 4);
  CHECK(links[0].integer("gen", 1, 5) == 3);
  auto devs = d.root().list("devices");
  CHECK(devs[1].size("bar0") == 1ull << 20);
  CHECK(devs[0].size("bar1") == 512ull << 20);
  CHECK(d.root().child("pcie").size("mps") == 512);
}

TEST_CASE("overrides: missing intermediate maps are created", "[config][overrides]") {
  document d = document::parse("sockets:\n  - {name: cpu0}\n", "t.yaml");
  apply_override(d, parse_override("sockets.cpu0.root_complex.p2p.read.outstanding=4"));
  apply_override(d, parse_override("new.section.key=x"));
  node_reader s = d.root().list("sockets")[0];
  CHECK(s.child("root_complex").child("p2p").child("read").integer("outstanding", 0, 9) == 4);
  CHECK(d.root().child("new").child("section").str("key") == "x");
  apply_override(d, parse_override("between=[cpu0, cpu1]"));
  CHECK(d.root().string_list("between") == std::vector<std::string>{"cpu0", "cpu1"});
}

TEST_CASE("overrides: a path selecting nothing names the --set text", "[config][overrides]") {
  document d = document::parse(k_text, "t.yaml");
  CHECK_THAT(
      error_of([&] { apply_override(d, parse_override("link.gpu9.gen=4"), rules()); }).what(),
      Equals("--set link.gpu9.gen=4: error: no element of 'links' has down 'gpu9' "
             "(have: sw0, gpu0)"));
  CHECK_THAT(
      error_of([&] { apply_override(d, parse_override("device.gpu0.bar1.x=1"), rules()); }).what(),
      Contains("--set device.gpu0.bar1.x=1: error: 'bar1' holds a value, not a map"));
  CHECK_THAT(error_of([&] { apply_override(d, parse_override("device.gpu0=1"), rules()); }).what(),
             Contains("selects a whole element"));
  document empty = document::parse("name: x\n", "t.yaml");
  CHECK_THAT(
      error_of([&] { apply_override(empty, parse_override("link.gpu0.gen=4"), rules()); }).what(),
      Contains("no 'links' list, so nothing is named 'gpu0'"));
  CHECK_THAT(
      error_of([&] { apply_override(d, parse_override("pcie.mps={a: [}"), rules()); }).what(),
      Contains("not a valid YAML flow list or map"));
}

TEST_CASE("overrides: errors about overridden values point at the --set", "[config][overrides]") {
  document d = document::parse(k_text, "t.yaml");
  apply_override(d, parse_override("link.gpu0.gen=fast"), rules());
  apply_override(d, parse_override("link.sw0.genn=4"), rules());
  auto links = d.root().list("links");
  error e = error_of([&] { links[1].integer("gen", 1, 5); });
  CHECK_THAT(e.what(), Equals("--set link.gpu0.gen=fast: error: gen: expected an integer from 1 "
                              "to 5, got 'fast'"));
  CHECK(e.loc.line == 0);
  links[0].str("up");
  links[0].str("down");
  links[0].integer("gen", 1, 5);
  CHECK_THAT(error_of([&] { links[0].done(); }).what(),
             Contains("--set link.sw0.genn=4: error: unknown key 'genn'"));
  // Values the override did not touch keep their file locations.
  CHECK(links[1].loc("down").str() == "t.yaml:4:21");
}
