// The data-integrity rule for writes that did not all land (fault injection): a byte is
// either the old value or the new one, and no more new bytes than the fabric delivered.
#include <catch2/catch.hpp>
#include <vector>

#include "sim/core/integrity.h"

using p2psim::core::escaped_bytes;

namespace {
const std::vector<uint8_t> written = {1, 2, 3, 4, 5, 6, 7, 8};
const std::vector<uint8_t> before = {0xFE, 0xFD, 0xFC, 0xFB, 0xFA, 0xF9, 0xF8, 0xF7};
}  // namespace

TEST_CASE("integrity: what landed and what did not account for every byte", "[integrity]") {
  std::vector<uint8_t> memory = before;
  CHECK(escaped_bytes(memory, written, before, 0) == 0);  // nothing landed, nothing changed
  for (int i = 0; i < 3; ++i) memory[i] = written[i];
  CHECK(escaped_bytes(memory, written, before, 3) == 0);  // three landed and were counted
  CHECK(escaped_bytes(memory, written, before, 8) == 0);  // the rule bounds only from above
}

TEST_CASE("integrity: new data beyond what landed escaped", "[integrity]") {
  std::vector<uint8_t> memory = written;                  // all of it arrived ...
  CHECK(escaped_bytes(memory, written, before, 5) == 3);  // ... but only 5 bytes were allowed
}

TEST_CASE("integrity: a byte that is neither old nor new escaped", "[integrity]") {
  std::vector<uint8_t> memory = before;
  memory[6] = 0x55;  // something else wrote here
  CHECK(escaped_bytes(memory, written, before, 0) == 1);
}
