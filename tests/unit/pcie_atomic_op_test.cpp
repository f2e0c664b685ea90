// AtomicOps at the completer (PCIe Base Spec 6.15.1): FetchAdd adds and wraps at the operand
// size, Swap replaces, CAS replaces only when the compare value matches. Little endian.
#include <catch2/catch.hpp>
#include <vector>

#include "models/pcie/atomic_op.h"

using namespace p2psim::pcie;

namespace {
std::vector<uint8_t> le(uint64_t v, size_t n) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = uint8_t(v >> (8 * i));
  return b;
}
std::vector<uint8_t> cat(std::vector<uint8_t> a, const std::vector<uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
}  // namespace

TEST_CASE("atomics: FetchAdd adds and wraps at the operand size", "[atomic]") {
  CHECK(atomic_result(tlp_type::fetch_add, le(40, 8), le(2, 8)) == le(42, 8));
  CHECK(atomic_result(tlp_type::fetch_add, le(0xFFFFFFFF, 4), le(3, 4)) == le(2, 4));
  CHECK(atomic_result(tlp_type::fetch_add, le(0xFFFFFFFF, 8), le(1, 8)) == le(0x100000000, 8));
}

TEST_CASE("atomics: Swap replaces the old value", "[atomic]") {
  CHECK(atomic_result(tlp_type::swap, le(7, 4), le(9, 4)) == le(9, 4));
  CHECK(atomic_result(tlp_type::swap, le(0x1122334455667788, 8), le(0, 8)) == le(0, 8));
}

TEST_CASE("atomics: CAS swaps only when the compare value matches", "[atomic]") {
  CHECK(atomic_result(tlp_type::cas, le(7, 8), cat(le(7, 8), le(9, 8))) == le(9, 8));
  CHECK(atomic_result(tlp_type::cas, le(6, 8), cat(le(7, 8), le(9, 8))) == le(6, 8));
  CHECK(atomic_result(tlp_type::cas, le(5, 4), cat(le(5, 4), le(1, 4))) == le(1, 4));
}

TEST_CASE("atomics: a CAS carries two operands and returns one", "[atomic]") {
  CHECK(atomic_result_bytes(tlp_type::cas, 16) == 8);
  CHECK(atomic_result_bytes(tlp_type::fetch_add, 8) == 8);
  CHECK(is_non_posted(tlp_type::swap));
  CHECK_FALSE(is_non_posted(tlp_type::mwr));
  CHECK(is_completion(tlp_type::cpld));
}
