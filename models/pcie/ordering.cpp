#include "models/pcie/ordering.h"

namespace p2psim::pcie {

order_class order_class_of(tlp_type t) {
  switch (t) {
    case tlp_type::mwr:
    case tlp_type::msg:
      return order_class::posted;
    case tlp_type::mrd:
      return order_class::read_request;
    case tlp_type::fetch_add:
    case tlp_type::swap:
    case tlp_type::cas:
      return order_class::nonposted_write;
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

const std::vector<rule_info>& ordering_rule_catalogue() {
  static const std::vector<rule_info> rules = {
      {order_rule::p_p, "P-P", "a posted request must not pass a posted request"},
      {order_rule::p_p_ro, "P-P:RO", "a posted request with RO may pass a posted request"},
      {order_rule::p_p_ido, "P-P:IDO",
       "a posted request with IDO may pass a posted request of another requester"},
      {order_rule::npr_p, "NPR-P", "a read request must not pass a posted request"},
      {order_rule::npr_p_ido, "NPR-P:IDO",
       "a read request with IDO may pass a posted request of another requester"},
      {order_rule::cpl_p, "Cpl-P", "a completion must not pass a posted request"},
      {order_rule::cpl_p_ro, "Cpl-P:RO", "a completion with RO may pass a posted request"},
      {order_rule::cpl_p_ido, "Cpl-P:IDO",
       "a completion with IDO may pass a posted request of another requester"},
      {order_rule::npw_p, "NPW-P", "a non-posted write must not pass a posted request"},
      {order_rule::npw_p_ro, "NPW-P:RO", "a non-posted write with RO may pass a posted request"},
      {order_rule::npw_p_ido, "NPW-P:IDO",
       "a non-posted write with IDO may pass a posted request of another requester"},
      {order_rule::p_npr, "P-NPR",
       "a posted request must be able to pass a read request (deadlock avoidance)"},
      {order_rule::p_npw, "P-NPW",
       "a posted request must be able to pass a non-posted write (deadlock avoidance)"},
      {order_rule::cpl_npr, "Cpl-NPR",
       "a completion must be able to pass a read request (deadlock avoidance)"},
      {order_rule::cpl_npw, "Cpl-NPW",
       "a completion must be able to pass a non-posted write (deadlock avoidance)"},
      {order_rule::cpl_cpl_same_txn, "Cpl-Cpl:same-txn",
       "completions of one request stay in address order"},
      {order_rule::gpu_writes_ordering, "GPU:writes-ordering",
       "kernels the WRITES_ORDERING attribute covers see RDMA writes as they land (guide 5.7)"},
      {order_rule::gpu_cpu_sync, "GPU:cpu-sync",
       "a CPU-initiated CUDA submission or synchronization makes landed RDMA writes visible to "
       "kernels (guide 5.7)"},
      {order_rule::gpu_flush, "GPU:flush",
       "cuFlushGPUDirectRDMAWrites makes landed RDMA writes visible within its scope (guide "
       "5.7)"},
      {order_rule::cuda_sync_memops, "CUDA:SYNC_MEMOPS",
       "a synchronous copy to or from memory with SYNC_MEMOPS is complete when the call "
       "returns (guide 5.7)"},
      {order_rule::cuda_stream_order, "CUDA:stream-order",
       "a copy is complete before the next work on its stream starts, and when the stream or "
       "context is synchronized"},
      {order_rule::gpu_bar1_read_back, "GPU:bar1-read-back",
       "a read through BAR1 returns the RDMA writes that have landed, whatever running kernels "
       "see (guide 5.7)"},
      {order_rule::host_snoop, "Host:snoop",
       "a write to host memory without No Snoop drops the CPUs' cached copies of the lines it "
       "touches (PCIe Base 2.2.6.5)"},
      {order_rule::host_no_snoop, "Host:no-snoop",
       "a write with No Snoop may leave the CPUs' cached copies stale until they are flushed or "
       "evicted (PCIe Base 2.2.6.5)"},
  };
  return rules;
}

std::optional<order_rule> ordering_rule_by_name(std::string_view name) {
  for (const auto& r : ordering_rule_catalogue())
    if (name == r.name) return r.id;
  return std::nullopt;
}

passing ordering_rules::may_pass(const tlp_header& later, const tlp_header& earlier) const {
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
  auto on = [&](order_rule r) { return enabled(r); };
  auto no_unless = [&](order_rule a_case) { return on(a_case) ? passing::no : passing::either; };

  if (col == order_class::posted) {
    switch (row) {
      case order_class::posted:  // a: No; b: RO, or IDO with another requester
        if ((ro && on(order_rule::p_p_ro)) || (ido && on(order_rule::p_p_ido)))
          return passing::either;
        return no_unless(order_rule::p_p);
      case order_class::nonposted_write:  // a: No; b: RO, or IDO with another requester
        if ((ro && on(order_rule::npw_p_ro)) || (ido && on(order_rule::npw_p_ido)))
          return passing::either;
        return no_unless(order_rule::npw_p);
      case order_class::completion:
        if ((ro && on(order_rule::cpl_p_ro)) || (ido && on(order_rule::cpl_p_ido)))
          return passing::either;
        return no_unless(order_rule::cpl_p);
      case order_class::read_request:  // RO never lets a read pass a write
        if (ido && on(order_rule::npr_p_ido)) return passing::either;
        return no_unless(order_rule::npr_p);
    }
  }
  switch (row) {
    case order_class::posted:  // P passes NPR and NPW: Yes; P-Cpl: Y/N
      if (col == order_class::completion) return passing::either;
      if (col == order_class::read_request)
        return on(order_rule::p_npr) ? passing::yes : passing::no;
      return on(order_rule::p_npw) ? passing::yes : passing::no;
    case order_class::read_request:
    case order_class::nonposted_write:
      return passing::either;
    case order_class::completion:
      if (col == order_class::completion) {
        // Completions of one request (same transaction ID) stay in address order.
        bool same_txn = later.requester_id == earlier.requester_id && later.tag == earlier.tag;
        return same_txn ? no_unless(order_rule::cpl_cpl_same_txn) : passing::either;
      }
      if (col == order_class::read_request)
        return on(order_rule::cpl_npr) ? passing::yes : passing::no;
      return on(order_rule::cpl_npw) ? passing::yes : passing::no;
  }
  return passing::either;
}

}  // namespace p2psim::pcie
