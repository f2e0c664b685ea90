// The ordering table's named rules (docs/design.md, "Ordering") and turning each one off
// (mutation), and the choice sources that decide its Y/N cases.
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "models/pcie/choices.h"
#include "models/pcie/ordering.h"

using namespace p2psim::pcie;

namespace {
tlp_header tlp(tlp_type t, uint16_t requester = 0x100, bool ro = false, bool ido = false) {
  tlp_header h;
  h.type = t;
  h.requester_id = requester;
  h.completer_id = requester;
  h.attrs.relaxed_ordering = ro;
  h.attrs.id_based_ordering = ido;
  return h;
}

struct cell {
  order_rule rule;
  tlp_header later, earlier;
  passing in_force, mutated;
};
}  // namespace

TEST_CASE("ordering rules: every rule has a unique name that finds it", "[ordering]") {
  std::set<std::string> names;
  for (const auto& r : ordering_rule_catalogue()) {
    CHECK(names.insert(r.name).second);
    REQUIRE(ordering_rule_by_name(r.name));
    CHECK(*ordering_rule_by_name(r.name) == r.id);
    CHECK(std::string(r.text).size() > 10);
  }
  CHECK(names.size() == size_t(order_rule::count));
  CHECK_FALSE(ordering_rule_by_name("P-Q"));
}

TEST_CASE("ordering rules: turning one off changes exactly its cell", "[ordering][mutation]") {
  const auto mwr = tlp_type::mwr, mrd = tlp_type::mrd, cpld = tlp_type::cpld;
  const auto npw = tlp_type::fetch_add;
  const cell cells[] = {
      {order_rule::p_p, tlp(mwr), tlp(mwr), passing::no, passing::either},
      {order_rule::p_p_ro, tlp(mwr, 0x100, true), tlp(mwr), passing::either, passing::no},
      {order_rule::p_p_ido, tlp(mwr, 0x100, false, true), tlp(mwr, 0x200), passing::either,
       passing::no},
      {order_rule::npr_p, tlp(mrd), tlp(mwr), passing::no, passing::either},
      {order_rule::npr_p_ido, tlp(mrd, 0x100, false, true), tlp(mwr, 0x200), passing::either,
       passing::no},
      {order_rule::cpl_p, tlp(cpld), tlp(mwr), passing::no, passing::either},
      {order_rule::cpl_p_ro, tlp(cpld, 0x100, true), tlp(mwr), passing::either, passing::no},
      {order_rule::cpl_p_ido, tlp(cpld, 0x100, false, true), tlp(mwr, 0x200), passing::either,
       passing::no},
      {order_rule::npw_p, tlp(npw), tlp(mwr), passing::no, passing::either},
      {order_rule::npw_p_ro, tlp(npw, 0x100, true), tlp(mwr), passing::either, passing::no},
      {order_rule::npw_p_ido, tlp(npw, 0x100, false, true), tlp(mwr, 0x200), passing::either,
       passing::no},
      {order_rule::p_npr, tlp(mwr), tlp(mrd), passing::yes, passing::no},
      {order_rule::p_npw, tlp(mwr), tlp(npw), passing::yes, passing::no},
      {order_rule::cpl_npr, tlp(cpld), tlp(mrd), passing::yes, passing::no},
      {order_rule::cpl_npw, tlp(cpld), tlp(npw), passing::yes, passing::no},
      {order_rule::cpl_cpl_same_txn, tlp(cpld), tlp(cpld), passing::no, passing::either},
  };
  REQUIRE(std::size(cells) == size_t(first_gpu_rule));  // every cell of the table
  for (const auto& c : cells) {
    INFO(ordering_rule_catalogue()[size_t(c.rule)].name);
    ordering_rules all;
    CHECK(all.may_pass(c.later, c.earlier) == c.in_force);
    ordering_rules mutated;
    mutated.disable(c.rule);
    CHECK(mutated.may_pass(c.later, c.earlier) == c.mutated);
    // Every other cell keeps its value under this mutation.
    for (const auto& other : cells)
      if (other.rule != c.rule &&
          !(other.later.type == c.later.type && other.earlier.type == c.earlier.type))
        CHECK(mutated.may_pass(other.later, other.earlier) == other.in_force);
  }
}

TEST_CASE("ordering rules: turning a GPU or CUDA rule off changes no cell of the table",
          "[ordering][mutation]") {
  const tlp_type types[] = {tlp_type::mwr, tlp_type::mrd, tlp_type::cpld, tlp_type::fetch_add};
  for (size_t r = size_t(first_gpu_rule); r < size_t(order_rule::count); ++r) {
    INFO(ordering_rule_catalogue()[r].name);
    ordering_rules all, mutated;
    mutated.disable(order_rule(r));
    for (auto later : types)
      for (auto earlier : types)
        for (bool ro : {false, true})
          for (bool ido : {false, true}) {
            const auto l = tlp(later, 0x100, ro, ido), e = tlp(earlier, 0x200);
            CHECK(mutated.may_pass(l, e) == all.may_pass(l, e));
          }
  }
}

TEST_CASE("ordering rules: RO never lets a read request pass a write", "[ordering]") {
  ordering_rules all;
  CHECK(all.may_pass(tlp(tlp_type::mrd, 0x100, true), tlp(tlp_type::mwr)) == passing::no);
}

TEST_CASE("ordering rules: every AtomicOp is a non-posted write", "[ordering]") {
  ordering_rules all;
  for (auto op : {tlp_type::fetch_add, tlp_type::swap, tlp_type::cas}) {
    CHECK(order_class_of(op) == order_class::nonposted_write);
    CHECK(fc_class_of(op) == fc_class::non_posted);
    CHECK(has_data(op));
    // The NPW row and column of the table (docs/design.md, "Ordering").
    CHECK(all.may_pass(tlp(op), tlp(tlp_type::mrd)) == passing::either);
    CHECK(all.may_pass(tlp(op), tlp(tlp_type::fetch_add)) == passing::either);
    CHECK(all.may_pass(tlp(op), tlp(tlp_type::cpld)) == passing::either);
    CHECK(all.may_pass(tlp(tlp_type::mrd), tlp(op)) == passing::either);
  }
}

TEST_CASE("choices: a replay follows its prefix then records the in-order alternative",
          "[choices]") {
  replay_choices r({2, 1});
  CHECK(r.pick(3) == 2);
  CHECK(r.pick(2) == 1);
  CHECK(r.pick(4) == 0);
  CHECK(r.taken() == std::vector<size_t>{2, 1, 0});
  CHECK(r.options() == std::vector<size_t>{3, 2, 4});
  replay_choices bad({5});
  CHECK(bad.pick(2) == 0);  // a prefix that no longer fits falls back to in order
}

TEST_CASE("choices: a seeded source is reproducible and covers every option", "[choices]") {
  seeded_choices a(42), b(42);
  std::set<size_t> seen;
  for (int i = 0; i < 200; ++i) {
    size_t x = a.pick(3);
    CHECK(x == b.pick(3));
    seen.insert(x);
  }
  CHECK(seen == std::set<size_t>{0, 1, 2});
  CHECK(a.picks() == 200);
}
