// What decides the order of TLPs in one fabric's queues: the ordering table in force and who
// picks among its Y/N cases. Each fabric has its own, made before its modules and handed to
// every place that may reorder (link egress queues, what GPU kernels see of RDMA writes), so
// two fabrics in one process share no rule and no decision, and a mutation (`p2psim litmus
// --mutate`) reaches only the fabrics built with it.
#pragma once

#include "models/pcie/choices.h"
#include "models/pcie/ordering.h"

namespace p2psim::pcie {

struct order_policy {
  ordering_rules rules;              // all of them unless a mutation turned one off
  choice_source* choices = nullptr;  // not owned; nullptr: always the in-order alternative
};

}  // namespace p2psim::pcie
