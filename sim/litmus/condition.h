// The condition of a litmus test over what the agents saw (registers) and what memory holds
// at the end (locations): comparisons joined by && and ||, with parentheses.
//
//   r0 == 1 && r1 == 0        flag seen new, data seen old
//   r0 != torn || data == 2
//
// A register that was never written (an await that timed out) holds `unset`; a location or
// register whose 8-byte words count 0, 1, 2, ... holds `ramp` (the `init: ramp` pattern, for
// checking that split completions land in place); any other mix of words (a write seen in
// part) is `torn`.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace p2psim::litmus {

struct value {
  enum kind_t : uint8_t { unset, number, torn, ramp } kind = unset;
  uint64_t n = 0;
  static value of(uint64_t v) { return {number, v}; }
  bool operator==(const value& o) const { return kind == o.kind && (kind != number || n == o.n); }
  std::string str() const;  // "3", "torn", "ramp", "unset"
};

class condition {
 public:
  condition() = default;
  // Throws std::invalid_argument with a message naming the column on a syntax error.
  static condition parse(const std::string& text);
  bool holds(const std::function<value(const std::string&)>& lookup) const;
  const std::vector<std::string>& names() const { return m_names; }  // in order of appearance
  const std::string& text() const { return m_text; }

  struct node;

 private:
  std::shared_ptr<const node> m_root;
  std::vector<std::string> m_names;
  std::string m_text;
};

}  // namespace p2psim::litmus
