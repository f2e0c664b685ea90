// The transaction ordering table: may the row (later TLP) pass the column (earlier TLP)?
// Every cell of docs/design.md, "Ordering" (PCIe Base Spec 2.4.1, table 2-40) for rows and
// columns P, NPR and Cpl. (The NPW row and column, AtomicOps, are checked in
// pcie_ordering_rules_test.cpp.)
#include <catch2/catch.hpp>

#include <string>

#include "models/pcie/address.h"
#include "models/pcie/ordering.h"

using namespace p2psim::pcie;

namespace {

const uint16_t k_rid_a = make_bdf(1, 0, 0);
const uint16_t k_rid_b = make_bdf(2, 0, 0);

struct tlp_builder {
  tlp_header h;
  explicit tlp_builder(tlp_type t) { h.type = t; }
  tlp_builder& requester(uint16_t id) {
    h.requester_id = id;
    return *this;
  }
  tlp_builder& completer(uint16_t id) {
    h.completer_id = id;
    return *this;
  }
  tlp_builder& tag(uint16_t t) {
    h.tag = t;
    return *this;
  }
  tlp_builder& ro() {
    h.attrs.relaxed_ordering = true;
    return *this;
  }
  tlp_builder& ido() {
    h.attrs.id_based_ordering = true;
    return *this;
  }
  tlp_builder& tc(uint8_t c) {
    h.attrs.traffic_class = c;
    return *this;
  }
  operator tlp_header() const { return h; }
};

tlp_builder mwr() {
  return tlp_builder(tlp_type::mwr).requester(k_rid_a);
}
tlp_builder msg() {
  return tlp_builder(tlp_type::msg).requester(k_rid_a);
}
tlp_builder mrd() {
  return tlp_builder(tlp_type::mrd).requester(k_rid_a).tag(1);
}
tlp_builder cpld() {
  return tlp_builder(tlp_type::cpld).requester(k_rid_a).completer(k_rid_b).tag(1);
}
tlp_builder cpl() {
  return tlp_builder(tlp_type::cpl).requester(k_rid_a).completer(k_rid_b).tag(1);
}

// The full table, as every fabric has it unless a mutation turns a rule off.
passing may_pass(const tlp_header& later, const tlp_header& earlier) {
  return ordering_rules{}.may_pass(later, earlier);
}

}  // namespace

TEST_CASE("ordering: order classes and names", "[pcie][ordering]") {
  CHECK(order_class_of(tlp_type::mwr) == order_class::posted);
  CHECK(order_class_of(tlp_type::msg) == order_class::posted);
  CHECK(order_class_of(tlp_type::mrd) == order_class::read_request);
  CHECK(order_class_of(tlp_type::cpl) == order_class::completion);
  CHECK(order_class_of(tlp_type::cpld) == order_class::completion);
  CHECK(std::string(to_string(passing::no)) == "No");
  CHECK(std::string(to_string(passing::yes)) == "Yes");
  CHECK(std::string(to_string(passing::either)) == "Y/N");
}

TEST_CASE("ordering: P row", "[pcie][ordering]") {
  // P-P a: No (producer/consumer).
  CHECK(may_pass(mwr(), mwr()) == passing::no);
  CHECK(may_pass(msg(), mwr()) == passing::no);
  CHECK(may_pass(mwr(), msg()) == passing::no);
  // P-P b: Relaxed Ordering on the passing TLP, or IDO with different requester IDs: Y/N.
  CHECK(may_pass(mwr().ro(), mwr()) == passing::either);
  CHECK(may_pass(mwr(), mwr().ro()) == passing::no);  // RO on the earlier TLP does not count
  CHECK(may_pass(mwr().ido().requester(k_rid_b), mwr()) == passing::either);
  CHECK(may_pass(mwr().ido(), mwr()) == passing::no);  // IDO, same requester
  CHECK(may_pass(mwr().requester(k_rid_b), mwr().ido()) == passing::no);
  // P-NPR: Yes (deadlock avoidance).
  CHECK(may_pass(mwr(), mrd()) == passing::yes);
  CHECK(may_pass(msg(), mrd()) == passing::yes);
  // P-Cpl a: Y/N.
  CHECK(may_pass(mwr(), cpld()) == passing::either);
  CHECK(may_pass(mwr(), cpl()) == passing::either);
}

TEST_CASE("ordering: NPR row", "[pcie][ordering]") {
  // NPR-P a: No.
  CHECK(may_pass(mrd(), mwr()) == passing::no);
  // NPR-P b: IDO with different requester IDs only; RO never lets a read pass a write.
  CHECK(may_pass(mrd().ro(), mwr()) == passing::no);
  CHECK(may_pass(mrd().ido().requester(k_rid_b), mwr()) == passing::either);
  CHECK(may_pass(mrd().ido(), mwr()) == passing::no);
  CHECK(may_pass(mrd().ro().ido(), mwr()) == passing::no);
  // NPR-NPR and NPR-Cpl: Y/N.
  CHECK(may_pass(mrd(), mrd()) == passing::either);
  CHECK(may_pass(mrd().tag(2), mrd()) == passing::either);
  CHECK(may_pass(mrd(), cpld()) == passing::either);
  CHECK(may_pass(mrd(), cpl()) == passing::either);
}

TEST_CASE("ordering: Cpl row", "[pcie][ordering]") {
  // Cpl-P a: No.
  CHECK(may_pass(cpld(), mwr()) == passing::no);
  CHECK(may_pass(cpl(), mwr()) == passing::no);
  // Cpl-P b: RO, or IDO with the completer ID different from the write's requester ID.
  CHECK(may_pass(cpld().ro(), mwr()) == passing::either);
  CHECK(may_pass(cpld().ido(), mwr()) == passing::either);  // completer B, requester A
  CHECK(may_pass(cpld().ido().completer(k_rid_a), mwr()) == passing::no);
  // Cpl-NPR: Yes.
  CHECK(may_pass(cpld(), mrd()) == passing::yes);
  CHECK(may_pass(cpl(), mrd()) == passing::yes);
  // Cpl-Cpl a: different transaction IDs, Y/N.
  CHECK(may_pass(cpld().tag(2), cpld()) == passing::either);
  CHECK(may_pass(cpld().requester(k_rid_b), cpld()) == passing::either);
  // Cpl-Cpl b: same transaction ID (requester ID + tag): No, so split completions stay in
  // address order; RO does not change that.
  CHECK(may_pass(cpld(), cpld()) == passing::no);
  CHECK(may_pass(cpld().ro(), cpld()) == passing::no);
  CHECK(may_pass(cpl(), cpld()) == passing::no);
}

TEST_CASE("ordering: different traffic classes are unordered", "[pcie][ordering]") {
  // docs/design.md, "Ordering": rules hold per traffic class.
  CHECK(may_pass(mwr().tc(1), mwr()) == passing::either);
  CHECK(may_pass(mrd().tc(7), mwr().tc(0)) == passing::either);
  CHECK(may_pass(cpld().tc(2), mwr().tc(3)) == passing::either);
  CHECK(may_pass(cpld().tc(1), cpld()) == passing::either);
  // Same non-zero class: the table applies.
  CHECK(may_pass(mwr().tc(5), mwr().tc(5)) == passing::no);
  CHECK(may_pass(cpld().tc(5), cpld().tc(5)) == passing::no);
}
