#include "models/pcie/atomic_op.h"

namespace p2psim::pcie {

std::vector<uint8_t> atomic_result(tlp_type op, std::span<const uint8_t> old,
                                   std::span<const uint8_t> operand) {
  auto value = [](std::span<const uint8_t> b) {
    uint64_t v = 0;
    for (size_t i = b.size(); i-- > 0;) v = v << 8 | b[i];
    return v;
  };
  const size_t n = old.size();
  uint64_t result = value(old);
  switch (op) {
    case tlp_type::fetch_add:
      result += value(operand);
      break;
    case tlp_type::swap:
      result = value(operand);
      break;
    case tlp_type::cas:  // compare value first, swap value second
      if (value(operand.first(n)) == result) result = value(operand.subspan(n, n));
      break;
    default:
      break;
  }
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = uint8_t(result >> (8 * i));
  return out;
}

}  // namespace p2psim::pcie
