// The PCIe transaction ordering table (PCIe Base Spec 2.4.1; docs/design.md, "Ordering"): may
// a TLP (the row) pass an earlier one (the column) that is waiting in the same queue?
#pragma once

#include <bitset>
#include <optional>
#include <string_view>
#include <vector>

#include "models/pcie/tlp.h"

namespace p2psim::pcie {

enum class order_class { posted, read_request, nonposted_write, completion };
order_class order_class_of(tlp_type t);

enum class passing {
  no,      // must not pass (producer/consumer)
  yes,     // must be able to pass (deadlock avoidance)
  either,  // Y/N: the implementation chooses
};
const char* to_string(passing p);

// The table's rules by name, so a test can turn exactly one off (mutation testing). Turning
// off a "No" rule makes the pair Y/N; turning off a "Yes" rule (deadlock avoidance) makes it
// No; turning off a b-case relaxation (RO, IDO) leaves the a-case No in force.
enum class order_rule : uint8_t {
  p_p,               // "P-P": a posted request must not pass a posted request
  p_p_ro,            // "P-P:RO": ... unless the later one has Relaxed Ordering (Y/N)
  p_p_ido,           // "P-P:IDO": ... or IDO and another requester (Y/N)
  npr_p,             // "NPR-P": a read request must not pass a posted request
  npr_p_ido,         // "NPR-P:IDO": ... unless IDO and another requester (RO never does)
  cpl_p,             // "Cpl-P": a completion must not pass a posted request
  cpl_p_ro,          // "Cpl-P:RO"
  cpl_p_ido,         // "Cpl-P:IDO"
  npw_p,             // "NPW-P": a non-posted write (AtomicOp) must not pass a posted request
  npw_p_ro,          // "NPW-P:RO"
  npw_p_ido,         // "NPW-P:IDO"
  p_npr,             // "P-NPR": a posted request must be able to pass a read request
  p_npw,             // "P-NPW": ... and a non-posted write
  cpl_npr,           // "Cpl-NPR": a completion must be able to pass a read request
  cpl_npw,           // "Cpl-NPW": ... and a non-posted write
  cpl_cpl_same_txn,  // "Cpl-Cpl:same-txn": completions of one request stay in address order
  // What GPU kernels and CUDA calls may observe (GPUDirect RDMA guide 5.7), named beside the
  // table so that one mutation switch reaches both; the GPU and CUDA models consult them.
  gpu_writes_ordering,  // "GPU:writes-ordering": the attribute's consumers see RDMA writes in order
  gpu_cpu_sync,         // "GPU:cpu-sync": a CPU-initiated submission or sync shows landed writes
  gpu_flush,            // "GPU:flush": cuFlushGPUDirectRDMAWrites shows them within its scope
  cuda_sync_memops,     // "CUDA:SYNC_MEMOPS": a synchronous copy with it is complete on return
  cuda_stream_order,    // "CUDA:stream-order": a copy is complete before the stream goes on
  gpu_bar1_read_back,   // "GPU:bar1-read-back": a BAR1 read returns the RDMA writes landed
  // What CPUs see of host memory (root_complex/cpu_cache.h).
  host_snoop,     // "Host:snoop": a write without No Snoop drops the CPUs' cached lines
  host_no_snoop,  // "Host:no-snoop": one with No Snoop may leave them stale
  count
};
// The first rule that is not a cell of the PCIe table.
inline constexpr order_rule first_gpu_rule = order_rule::gpu_writes_ordering;

struct rule_info {
  order_rule id;
  const char* name;
  const char* text;
};
const std::vector<rule_info>& ordering_rule_catalogue();
std::optional<order_rule> ordering_rule_by_name(std::string_view name);

class ordering_rules {
 public:
  void disable(order_rule r) { m_off.set(size_t(r)); }
  bool enabled(order_rule r) const { return !m_off.test(size_t(r)); }
  // `later` wants to pass `earlier`. Rules hold within one traffic class; TLPs of different
  // traffic classes have no ordering relation (`either`).
  passing may_pass(const tlp_header& later, const tlp_header& earlier) const;

 private:
  std::bitset<size_t(order_rule::count)> m_off;
};

}  // namespace p2psim::pcie
