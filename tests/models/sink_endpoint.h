// A device with one port that takes in whatever arrives, frees its buffer at once and
// answers nothing: the far end of a link in a model test.
#pragma once

#include <systemc>
#include <tlm>

#include "models/transport/pcie_port.h"

namespace p2psim::test {

struct sink_endpoint : sc_core::sc_module, transport::tlp_handler {
  transport::pcie_port port;
  explicit sink_endpoint(sc_core::sc_module_name n) : sc_module(n), port("port", *this, 0) {}
  void receive(int, tlm::tlm_generic_payload& gp) override {
    port.free_buffer(gp);
    gp.release();
  }
  void sent(int, tlm::tlm_generic_payload&, uint64_t) override {}
};

}  // namespace p2psim::test
