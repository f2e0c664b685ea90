#include "sim/litmus/reference/pcie_table.h"

namespace p2psim::litmus::reference {

bool may_pass(const tlp_ordering& later, const tlp_ordering& earlier, const rule_set& rules,
              std::string* why) {
  const std::string cell =
      std::string(table_letters(later.kind)) + "-" + table_letters(earlier.kind);
  auto answer = [&](bool pass, const std::string& rule) {
    if (why) *why = rule;
    return pass;
  };
  // PCIe Base 2.4.1: the rules hold within one Traffic Class; TLPs of two TCs are not ordered.
  if (later.tc != earlier.tc) return answer(true, "TCs differ");
  if (earlier.kind == tlp_kind::posted) {
    // Column 2: every row "a) No" (producer/consumer), "b) Y/N" for the attributes. RO lets a
    // posted request, an AtomicOp and a completion pass, never a read request (a read must
    // push the writes ahead of it); IDO lets any of them pass the posted requests of another
    // requester.
    const bool other_requester = later.requester != earlier.requester;
    if (later.ro && later.kind != tlp_kind::read && rules.on(cell + ":RO"))
      return answer(true, cell + ":RO");
    if (later.ido && other_requester && rules.on(cell + ":IDO")) return answer(true, cell + ":IDO");
    if (rules.on(cell)) return answer(false, cell);
    return answer(true, cell + " (off)");
  }
  if (later.kind == tlp_kind::completion && earlier.kind == tlp_kind::completion &&
      later.request >= 0 && later.request == earlier.request) {
    // Cpl-Cpl b): completions of one request stay in address order.
    if (rules.on("Cpl-Cpl:same-txn")) return answer(false, "Cpl-Cpl:same-txn");
    return answer(true, "Cpl-Cpl:same-txn (off)");
  }
  // Every other cell is Yes (must be able to pass, to avoid deadlock) or Y/N: either order.
  return answer(true, cell);
}

}  // namespace p2psim::litmus::reference
