#include "models/pcie/ordering.h"

namespace p2psim::pcie {

order_class order_class_of(tlp_type t) {
  switch (t) {
    case tlp_type::mwr:
    case tlp_type::msg:
      return order_class::posted;
    case tlp_type::mrd:
      return order_class::read_request;
    default:
      return order_class::completion;
  }
}

const char* to_string(passing p) {
  switch (p) {
    case passing::no:
      return "No";
    case passing::yes:
      return "Yes";
    case passing::either:
      return "Y/N";
  }
  return "?";
}

passing may_pass(const tlp_header& later, const tlp_header& earlier) {
  if (later.attrs.traffic_class != earlier.attrs.traffic_class) return passing::either;
  const order_class row = order_class_of(later.type);
  const order_class col = order_class_of(earlier.type);
  // IDO relaxes ordering only between different requesters (for completions: completers).
  const uint16_t later_id =
      row == order_class::completion ? later.completer_id : later.requester_id;
  const uint16_t earlier_id =
      col == order_class::completion ? earlier.completer_id : earlier.requester_id;
  const bool ido = later.attrs.id_based_ordering && later_id != earlier_id;
  const bool ro = later.attrs.relaxed_ordering;

  if (col == order_class::posted) {
    switch (row) {
      case order_class::posted:           // P-P: a No; b RO, or IDO with other requester
      case order_class::nonposted_write:  // NPW-P: a No; b RO or IDO
      case order_class::completion:       // Cpl-P: a No; b RO or IDO
        return ro || ido ? passing::either : passing::no;
      case order_class::read_request:  // NPR-P: a No; b IDO only (RO never lets a read pass)
        return ido ? passing::either : passing::no;
    }
  }
  switch (row) {
    case order_class::posted:  // P passes NPR and NPW: Yes; P-Cpl a: Y/N
      return col == order_class::completion ? passing::either : passing::yes;
    case order_class::read_request:
    case order_class::nonposted_write:
      return passing::either;
    case order_class::completion:
      if (col == order_class::completion) {
        // Completions of one request (same transaction ID) stay in address order.
        bool same_txn = later.requester_id == earlier.requester_id && later.tag == earlier.tag;
        return same_txn ? passing::no : passing::either;
      }
      return passing::yes;  // Cpl passes NPR and NPW
  }
  return passing::either;
}

}  // namespace p2psim::pcie
