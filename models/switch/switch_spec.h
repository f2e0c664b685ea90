// What a topology file sets for a PCIe switch (docs/formats-topology.md, "switches[]").
#pragma once

#include "models/params/param.h"

namespace p2psim::pcie_switch {

struct switch_spec {
  double latency_ns = 110;    // header in to header out
  bool cut_through = true;    // false: store-and-forward (the tail must be in first)
  bool acs_redirect = false;  // ACS P2P Request Redirect: peer requests go up to the RC
  int ports = 0;              // downstream ports; 0: as many as links below it
};

inline const params::table<switch_spec>& switch_spec_params() {
  static const params::table<switch_spec> t{
      params::time("latency", &switch_spec::latency_ns,
                   "Ingress to egress, header in to header out."),
      params::choice("forwarding", &switch_spec::cut_through,
                     {{"cut_through", true}, {"store_and_forward", false}},
                     "`store_and_forward` waits for the whole TLP."),
      params::boolean("acs_redirect", &switch_spec::acs_redirect,
                      "ACS P2P Request Redirect: peer requests go up to the root complex. Forced "
                      "on below a socket whose `iommu.mode` is `translating`."),
      params::integer("ports", &switch_spec::ports,
                      "Downstream ports; 0 = as many as links below it. More links than ports "
                      "is an error.")
          .between(0, 32),
  };
  return t;
}

}  // namespace p2psim::pcie_switch
