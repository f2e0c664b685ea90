// The litmus condition language: comparisons joined by && and ||, parentheses, the special
// values, and syntax errors that name the column.
#include <catch2/catch.hpp>
#include <map>

#include "sim/litmus/condition.h"

using p2psim::litmus::condition;
using p2psim::litmus::value;

namespace {
bool holds(const std::string& text, const std::map<std::string, value>& v) {
  return condition::parse(text).holds([&](const std::string& n) {
    auto it = v.find(n);
    return it == v.end() ? value{} : it->second;
  });
}
}  // namespace

TEST_CASE("litmus conditions compare registers and locations", "[unit][litmus]") {
  std::map<std::string, value> v{{"f", value::of(1)}, {"d", value::of(0)}};
  CHECK(holds("f == 1 && d != 1", v));
  CHECK_FALSE(holds("f == 1 && d == 1", v));
  CHECK(holds("f == 0 || d == 0", v));
  CHECK(holds("(f == 0 || d == 0) && f == 1", v));
  CHECK_FALSE(holds("f == 0 || d == 0 && f == 0", v));  // && binds tighter
  CHECK(holds("f == 0x1", v));
}

TEST_CASE("litmus conditions know unset torn and ramp", "[unit][litmus]") {
  std::map<std::string, value> v{{"t", {value::torn, 0}}, {"r", {value::ramp, 0}}};
  CHECK(holds("t == torn && r == ramp && u == unset", v));
  CHECK(holds("u != 0", v));  // an unset register equals no number
  CHECK_FALSE(holds("t == 0", v));
}

TEST_CASE("litmus conditions list their names once in order", "[unit][litmus]") {
  auto c = condition::parse("b == 1 && a == 2 || b == 3");
  CHECK(c.names() == std::vector<std::string>{"b", "a"});
}

TEST_CASE("litmus condition syntax errors name the column", "[unit][litmus]") {
  CHECK_THROWS_WITH(condition::parse("x = 1"),
                    Catch::Contains("column 3") && Catch::Contains("expected == or !="));
  CHECK_THROWS_WITH(condition::parse("x == one"), Catch::Contains("expected a number"));
  CHECK_THROWS_WITH(condition::parse("(x == 1"), Catch::Contains("expected ')'"));
  CHECK_THROWS_WITH(condition::parse("x == 1 y"), Catch::Contains("unexpected"));
  CHECK_THROWS_WITH(condition::parse(""), Catch::Contains("expected a register"));
}
