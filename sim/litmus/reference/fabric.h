// Where a litmus test's requests go, for the reference model: the queues (one per direction
// of each link, and of each socket interconnect) a request and its completions wait in on
// their way, and what the root complexes on the way do with them. Timing plays no part: a
// queue is only an order.
//
// A request for host memory of a root complex that may commit writes with Relaxed Ordering out
// of order (its platform's `root_complex.reorders_relaxed_writes`) waits in one more queue,
// its way into memory, where the table decides what passes what as on a link.
//
// A request between two devices through a root complex is forwarded (if the platform routes
// peer-to-peer traffic that way at all) and re-emitted in the platform's pieces; a read is
// proxied: the root complex reads the target itself, under its own requester ID, and returns
// the data to the requester in address order. AtomicOps are not routed between root ports
// (docs/formats-litmus.md, "Agents").
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/litmus/reference/pcie_table.h"
#include "sim/topology/topology.h"

namespace p2psim::litmus::reference {

// A stretch of a path: the queues, in order, and the size each re-emits requests in when they
// enter it (0: as they are).
struct leg {
  std::vector<int> queues;
  std::vector<uint32_t> pieces;
};

struct route {
  std::string refused;  // why the fabric answers Unsupported Request ("" if it does not)
  leg out;              // requester to completer, or to the root complex that proxies a read
  leg back;             // completer (or that root complex) to requester
  int completer = 0;    // the completer's ID
  // A read proxied by a root complex: its own request to the completer and the way back.
  bool proxied = false;
  int proxy = 0;  // the root complex's ID
  leg proxy_out, proxy_back;
};

class fabric {
 public:
  explicit fabric(const topo::topology& t);

  // The route of a request of `kind` from `device` to the memory of `memory` (a device or a
  // socket).
  route request(const std::string& device, const std::string& memory, tlp_kind kind) const;
  int id_of(const std::string& node) const;  // a requester or completer ID
  const std::string& queue_name(int q) const { return m_queue_names[size_t(q)]; }
  size_t queue_count() const { return m_queue_names.size(); }  // of the routes made so far

 private:
  leg make_leg(const std::vector<std::string>& nodes, size_t from, size_t to,
               uint32_t pieces) const;
  int queue(const std::string& from, const std::string& to) const;

  const topo::topology& m_topo;
  std::map<std::string, int> m_ids;
  mutable std::map<std::pair<std::string, std::string>, int> m_queues;
  mutable std::vector<std::string> m_queue_names;
};

}  // namespace p2psim::litmus::reference
