// What a topology file sets for a PCIe link and for a socket interconnect
// (docs/formats-topology.md, "links[]", "interconnects[]").
#pragma once

#include <algorithm>
#include <cstdint>

#include "models/params/param.h"
#include "models/pcie/credits.h"

namespace p2psim::link {

struct link_spec {
  int gen = 3;              // 1..5
  int width = 16;           // lanes
  double latency_ns = 5.0;  // propagation, one way (wire + PHY pipeline)
  bool ecrc = false;        // TLPs carry ECRC (+4 bytes each)
  // Bytes between ACK / UpdateFC DLLPs; 0: the spec's recommended table value for this gen,
  // width and MPS (PCIe Base Spec 5.0 tables 3-7..3-9 and 2-46..2-48).
  uint32_t ack_limit = 0, fc_limit = 0;
  // Receiver buffer sizes in flow-control credits (PCIe Base Spec 2.6.1: a header credit holds
  // one TLP header, a data credit 16 bytes); 0: infinite (advertised as 0 on the wire).
  pcie::credit_limits credits{64, 1024, 64, 64, 64, 1024};
};

// Header credits hold 127 and data credits 2047 unscaled; Scaled Flow Control multiplies by
// up to 16.
inline const params::table<pcie::credit_limits>& credit_params() {
  using pcie::credit_limits;
  static const params::table<credit_limits> t{
      params::integer("ph", &credit_limits::ph, "Posted request headers.").between(0, 127 * 16),
      params::integer("pd", &credit_limits::pd, "Posted request data, 16 bytes each.")
          .between(0, 2047 * 16),
      params::integer("nph", &credit_limits::nph, "Non-posted request headers.")
          .between(0, 127 * 16),
      params::integer("npd", &credit_limits::npd, "Non-posted request data.").between(0, 2047 * 16),
      params::integer("cplh", &credit_limits::cplh, "Completion headers.").between(0, 127 * 16),
      params::integer("cpld", &credit_limits::cpld, "Completion data.").between(0, 2047 * 16),
  };
  return t;
}

inline const params::table<link_spec>& link_spec_params() {
  static const params::table<link_spec> t = params::join<link_spec>({
      {
          params::integer("gen", &link_spec::gen,
                          "PCIe generation. A root-port link may not exceed its socket's "
                          "platform `max_gen`.")
              .between(1, 5),
          params::choice(
              "width", &link_spec::width,
              {{"1", 1}, {"2", 2}, {"4", 4}, {"8", 8}, {"12", 12}, {"16", 16}, {"32", 32}},
              "Lanes."),
          params::time("latency", &link_spec::latency_ns,
                       "Propagation, one way (wire + PHY pipeline)."),
          params::boolean("ecrc", &link_spec::ecrc, "End-to-end CRC: +4 bytes per TLP."),
          params::integer("ack_limit", &link_spec::ack_limit,
                          "Bytes between ACK DLLPs, both directions; 0 = what each end's "
                          "receiver sends (its device or platform preset's `ack_limit`), else "
                          "the spec's table value for gen, width and MPS.")
              .between(0, 1 << 20),
          params::integer("fc_limit", &link_spec::fc_limit,
                          "Bytes between UpdateFC DLLPs, both directions; 0 = each end's "
                          "receiver's `fc_limit`, else the spec's table value.")
              .between(0, 1 << 20),
      },
      params::within("credits", &link_spec::credits, credit_params()),
  });
  return t;
}

// A socket interconnect (QPI/UPI/xGMI), per direction. A platform sets it for its sockets; an
// interconnect in a topology may set its own.
struct interconnect_spec {
  double bandwidth_gbs = 20;
  double latency_ns = 100;
};

// Of two sockets' interconnect timings, the slower: the lower bandwidth, the longer latency
// (a link between sockets of mixed platforms, docs/formats-topology.md, "Mixed platforms").
inline interconnect_spec slower(const interconnect_spec& a, const interconnect_spec& b) {
  return {std::min(a.bandwidth_gbs, b.bandwidth_gbs), std::max(a.latency_ns, b.latency_ns)};
}

inline const params::table<interconnect_spec>& interconnect_spec_params() {
  static const params::table<interconnect_spec> t{
      params::bandwidth("bandwidth", &interconnect_spec::bandwidth_gbs,
                        "Socket interconnect, per direction.")
          .above_zero(),
      params::time("latency", &interconnect_spec::latency_ns, "One way."),
  };
  return t;
}

}  // namespace p2psim::link
