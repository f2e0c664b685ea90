// The strict YAML reader: types, units, unknown and duplicate keys, locations.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "sim/config/reader.h"

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

document doc(const std::string& text) {
  return document::parse(text, "t.yaml");
}

}  // namespace

TEST_CASE("reader: typed getters read values and defaults", "[config][reader]") {
  document d =
      doc("name: gpu0\ngen: 4\nratio: 0.5\necrc: true\nbar1: 256MiB\nlatency: 110ns\n"
          "bw: 20.8GB/s\naddr: 0x1000\nmode: cut_through\nnames: [a, b]\n"
          "sub: {x: 1}\nitems:\n  - {n: 1}\n  - {n: 2}\n");
  node_reader r = d.root();
  CHECK(r.str("name") == "gpu0");
  CHECK(r.str("missing", "dflt") == "dflt");
  CHECK(r.integer("gen", 1, 5) == 4);
  CHECK(r.integer("width", 1, 32, 16) == 16);
  CHECK(r.number("ratio", 0, 1) == 0.5);
  CHECK(r.boolean("ecrc") == true);
  CHECK(r.boolean("acs", false) == false);
  CHECK(r.size("bar1") == 256ull << 20);
  CHECK(r.size("bar0", 4096) == 4096);
  CHECK(r.time_ns("latency") == Approx(110));
  CHECK(r.bandwidth_gbs("bw") == Approx(20.8));
  CHECK(r.address("addr") == 0x1000);
  CHECK(!r.optional_address("addr2"));
  CHECK(r.choice("mode", {"cut_through", "store_and_forward"}) == "cut_through");
  CHECK_THAT(r.string_list("names"), Equals(std::vector<std::string>{"a", "b"}));
  node_reader sub = r.child("sub");
  CHECK(sub.integer("x", 0, 9) == 1);
  sub.done();
  CHECK(!r.optional_child("nothing"));
  auto items = r.list("items");
  REQUIRE(items.size() == 2);
  CHECK(items[1].integer("n", 0, 9) == 2);
  CHECK(items[1].loc().line == 14);
  CHECK(r.optional_list("none").empty());
  CHECK_NOTHROW(r.done());
}

TEST_CASE("reader: unknown key reports its line:col and the expected keys", "[config][reader]") {
  node_reader r = doc("gen: 3\nwidth: 16\n  # comment\ngne: 4\n").root();
  r.integer("gen", 1, 5);
  r.integer("width", 1, 32);
  r.has("latency");
  error e = error_of([&] { r.done(); });
  CHECK(e.loc.line == 4);
  CHECK(e.loc.column == 1);
  CHECK_THAT(e.what(), Equals("t.yaml:4:1: error: unknown key 'gne' (expected one of: gen, width, "
                              "latency); did you mean 'gen'?"));
}

TEST_CASE("reader: wrong types name the key and what was expected", "[config][reader]") {
  node_reader r = doc("gen: fast\nname: [a]\nsize: {x: 1}\nflag: maybe\nlist: 3\nsub: [1]\n"
                      "mode: turbo\nratio: nan\nempty:\n")
                      .root();
  error e = error_of([&] { r.integer("gen", 1, 5); });
  CHECK_THAT(e.what(),
             Equals("t.yaml:1:6: error: gen: expected an integer from 1 to 5, got 'fast'"));
  CHECK_THAT(error_of([&] { r.str("name"); }).what(),
             Equals("t.yaml:2:7: error: name: expected a string, got a list"));
  CHECK_THAT(error_of([&] { r.size("size"); }).what(),
             Contains("size: expected a size such as 256MiB or 4KiB, got a map"));
  CHECK_THAT(error_of([&] { r.boolean("flag"); }).what(),
             Contains("flag: expected true or false, got 'maybe'"));
  CHECK_THAT(error_of([&] { r.list("list"); }).what(),
             Contains("t.yaml:5:7: error: list: expected a list of maps, got '3'"));
  CHECK_THAT(error_of([&] { r.list("sub"); }).what(),
             Contains("t.yaml:6:7: error: sub[0]: expected a map, got '1'"));
  CHECK_THAT(error_of([&] { r.child("list"); }).what(), Contains("list: expected a map, got '3'"));
  CHECK_THAT(error_of([&] {
               r.choice("mode", {"cut_through", "store_and_forward"});
             }).what(),
             Contains("mode: expected one of: cut_through, store_and_forward, got 'turbo'"));
  CHECK_THAT(error_of([&] { r.number("ratio", 0, 1); }).what(),
             Contains("ratio: expected a number from 0 to 1, got 'nan'"));
  CHECK_THAT(error_of([&] { r.integer("empty", 0, 5, 1); }).what(),
             Contains("t.yaml:9:1: error: empty: expected an integer from 0 to 5, got nothing"));
  CHECK_THAT(error_of([&] { r.str("absent"); }).what(),
             Contains("t.yaml:1:1: error: absent: missing required key"));
  CHECK_THAT(error_of([&] { r.integer("gen", 0, INT64_MAX); }).what(),
             Contains("expected an integer >= 0, got 'fast'"));
}

TEST_CASE("reader: unit errors carry the key and location", "[config][reader]") {
  node_reader r = doc("a:\n  bar1: 256Mb\n").root().child("a");
  CHECK_THAT(error_of([&] { r.size("bar1"); }).what(),
             Equals("t.yaml:2:9: error: bar1: unknown size unit 'Mb' in '256Mb' (use B, KiB, MiB, "
                    "GiB, TiB, PiB, EiB, kB, MB, GB, TB or PB)"));
}

TEST_CASE("reader: duplicate keys are an error", "[config][reader]") {
  error e = error_of([] { doc("a: 1\nb: 2\na: 3\n").root(); });
  CHECK(e.loc.line == 3);
  CHECK(e.key == "a");
  CHECK_THAT(e.what(), Contains("duplicate key (first defined at line 1, column 1)"));
  node_reader r = doc("x:\n  - {n: 1, n: 2}\n").root();
  CHECK_THAT(error_of([&] { r.list("x"); }).what(),
             Contains("t.yaml:2:12: error: n: duplicate key (first defined at line 2, column 6)"));
}

TEST_CASE("reader: empty or non-map or garbage documents are config errors", "[config][reader]") {
  CHECK_THAT(error_of([] { doc("").root(); }).what(),
             Equals("t.yaml:1:1: error: the file is empty; expected a map of keys"));
  CHECK_THAT(error_of([] { doc("# only a comment\n").root(); }).what(), Contains("empty"));
  CHECK_THAT(error_of([] { doc("# a list\n- a\n- b\n").root(); }).what(),
             Contains("t.yaml:2:1: error: expected a map of keys at the top level, got a list"));
  CHECK_THAT(error_of([] { doc("just text").root(); }).what(), Contains("got 'just text'"));
  CHECK_THAT(error_of([] { doc(std::string("a: \0\x01\xff", 6)); }).what(),
             Contains("t.yaml:1:4: error: not a text file"));
  CHECK_THAT(error_of([] { doc("a: [" + std::string(600, '[')); }).what(),
             Contains("nested too deeply"));
  error e = error_of([] { doc("a: [1, 2\nb: 3\n"); });
  CHECK(e.loc.line > 0);
  CHECK_THAT(e.what(), Contains("YAML syntax error"));
  CHECK_THAT(error_of([] { doc("\x89PNG\r\n\x1a\n\xff\xfe{[}]:::").root(); }).what(),
             Contains("t.yaml"));
  CHECK_THAT(error_of([] { doc("? [a, b]\n: 1\n").root(); }).what(),
             Contains("a key must be a plain name, got a list"));
}

TEST_CASE("reader: text that is not UTF-8 is named at its byte", "[config][reader]") {
  // Valid: ASCII, 2-, 3- and 4-byte characters, a byte order mark.
  for (const char* ok : {"a: b\n", "a: caf\xc3\xa9\n", "a: \xe2\x82\xac\n", "a: \xf0\x9f\x98\x80\n",
                         "\xef\xbb\xbf"
                         "a: b\n"})
    CHECK_NOTHROW(doc(ok));
  // A Latin-1 byte, a lone continuation byte, an overlong '/', a UTF-16 surrogate, a code
  // point above U+10FFFF and a character cut short by the end of the file.
  for (const char* bad : {"a: b\xe9\n", "a: \x80\n", "a: \xc0\xaf\n", "a: \xed\xa0\x80\n",
                          "a: \xf4\x90\x80\x80\n", "a: \xe2\x82"}) {
    error e = error_of([&] { doc(bad); });
    INFO(e.what());
    CHECK(e.loc.line == 1);
    CHECK(e.loc.column == (bad[3] == 'b' ? 5 : 4));
    CHECK_THAT(e.what(), Contains("not UTF-8 text"));
  }
  CHECK(error_of([] { doc("a: 1\nb: x\xff\n"); }).loc.line == 2);
}

TEST_CASE("reader: load reports missing files and directories", "[config][reader]") {
  CHECK_THAT(error_of([] { document::load("/nonexistent/x.yaml"); }).what(),
             Equals("/nonexistent/x.yaml: error: no such file"));
  CHECK_THAT(error_of([] { document::load(P2PSIM_SOURCE_DIR); }).what(),
             Contains("is a directory"));
  auto path = std::filesystem::temp_directory_path() / "p2psim_reader_test.yaml";
  std::ofstream(path) << "name: x\nbad: [\n";
  error e = error_of([&] { document::load(path.string()); });
  CHECK(e.loc.file == path.string());
  CHECK(e.loc.line >= 2);
  std::filesystem::remove(path);
}

TEST_CASE("reader: null values of optional maps and lists read as empty", "[config][reader]") {
  node_reader r = doc("pcie:\ndevices:\n").root();
  auto p = r.optional_child("pcie");
  REQUIRE(p);
  CHECK(p->keys().empty());
  CHECK(r.optional_list("devices").empty());
  CHECK_NOTHROW(r.done());
}

TEST_CASE("reader: copies share consumed keys and fail() points at the key", "[config][reader]") {
  node_reader r = doc("a: 1\nb:   2\n").root();
  node_reader copy = r;
  copy.integer("a", 0, 9);
  CHECK(r.keys() == std::vector<std::string>{"a", "b"});
  error e = error_of([&] { r.done(); });
  CHECK_THAT(e.what(), Contains("unknown key 'b' (expected one of: a)"));
  e = error_of([&] { r.fail("b", "custom"); });
  CHECK(e.loc.line == 2);
  CHECK(e.loc.column == 6);
  CHECK(e.key == "b");
  CHECK(r.loc("b").column == 6);
  CHECK(r.key_loc("b").column == 1);
}
