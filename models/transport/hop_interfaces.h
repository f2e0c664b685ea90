// The two directions of the hop protocol (pcie_port.h) as plain TLM interfaces. A port and a
// link direction implement them directly and bind their sockets to themselves: each hop then
// costs one virtual call per direction, where tlm_utils' convenience sockets add a dispatch
// through a member pointer and, on the backward path, a lookup in a map they keep for
// blocking calls that the hop protocol never makes.
#pragma once

#include <stdexcept>
#include <tlm>

namespace p2psim::transport {

// Forward: BEGIN_REQ hands a TLP over. Only non-blocking transport is part of the protocol.
class hop_forward : public tlm::tlm_fw_transport_if<> {
 public:
  void b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) override {
    throw std::logic_error("hop protocol: b_transport is not supported (non-blocking only)");
  }
  bool get_direct_mem_ptr(tlm::tlm_generic_payload&, tlm::tlm_dmi&) override { return false; }
  unsigned int transport_dbg(tlm::tlm_generic_payload&) override { return 0; }
};

// Backward: END_REQ says the buffer a TLP held is free. There is no DMI to invalidate.
class hop_backward : public tlm::tlm_bw_transport_if<> {
 public:
  void invalidate_direct_mem_ptr(sc_dt::uint64, sc_dt::uint64) override {}
};

}  // namespace p2psim::transport
