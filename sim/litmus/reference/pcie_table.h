// The PCIe transaction ordering table (PCIe Base 2.4.1, Table 2-40 in 4.0; docs/design.md,
// "Ordering"), written down here a second time, from the spec, for the reference model: which TLP
// may pass which in one queue. The simulator's own table is models/pcie/ordering; this one shares
// no code with it, so a mistake in one shows up as a disagreement with the other.
#pragma once

#include <set>
#include <string>

namespace p2psim::litmus::reference {

enum class tlp_kind { posted, read, atomic, completion };

// Its row and column in the table ("P", "NPR", "NPW", "Cpl"), and its name in a witness's steps.
inline const char* table_letters(tlp_kind k) {
  switch (k) {
    case tlp_kind::posted:
      return "P";
    case tlp_kind::read:
      return "NPR";
    case tlp_kind::atomic:
      return "NPW";
    case tlp_kind::completion:
      return "Cpl";
  }
  return "?";
}
inline const char* kind_name(tlp_kind k) {
  switch (k) {
    case tlp_kind::posted:
      return "write";
    case tlp_kind::read:
      return "read";
    case tlp_kind::atomic:
      return "AtomicOp";
    case tlp_kind::completion:
      return "completion";
  }
  return "?";
}

struct tlp_ordering {
  tlp_kind kind = tlp_kind::posted;
  bool ro = false, ido = false;
  int requester = 0;  // Requester ID; for a completion, the Completer ID
  int request = -1;   // for a completion: the request it answers (same Transaction ID)
  int tc = 0;         // Traffic Class: the table orders TLPs of one TC only
};

// The rules a cell of the table names (the names of `p2psim litmus --list-rules`) and the
// GPU and CUDA rules of the guide; a rule in `off` is taken out, as `--mutate` does to the
// simulator: a "must not pass" rule then lets TLPs pass, a "may pass" rule no longer does.
struct rule_set {
  std::set<std::string> off;
  bool on(const std::string& rule) const { return !off.count(rule); }
};

// Whether `later` may leave a queue before `earlier`, which came into it first. The rule that
// decided ("P-P:RO" lets a posted request with RO pass) goes into `why` when it is given.
bool may_pass(const tlp_ordering& later, const tlp_ordering& earlier, const rule_set& rules,
              std::string* why = nullptr);

}  // namespace p2psim::litmus::reference
