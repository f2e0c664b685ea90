// A TLP as a TLM-2.0 transaction: a tlm_generic_payload whose tlp_ext carries the PCIe header
// and whose data array carries the payload bytes. Transactions come from a pool (no
// allocation per TLP once warm) and go back to it when their last owner releases them.
#pragma once

#include <tlm>
#include <vector>

#include "models/pcie/tlp.h"

namespace p2psim::link {

struct tlp_ext : tlm::tlm_extension<tlp_ext> {
  pcie::tlp_header hdr;
  pcie::tlp_meta meta;
  int ingress_port = -1;  // set by a forwarding component: where the TLP came in
  // Set on the last piece when a component cuts one TLP into several: the original, whose
  // ingress buffer is freed once that piece has left.
  tlm::tlm_generic_payload* parent = nullptr;
  tlm::tlm_extension_base* clone() const override { return new tlp_ext(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    *this = static_cast<const tlp_ext&>(other);
  }
};

class tlp_txn : public tlm::tlm_generic_payload {
 public:
  tlp_txn() { set_extension(&ext); }
  ~tlp_txn() override { clear_extension(&ext); }
  tlp_ext ext;
  std::vector<uint8_t> bytes;
};

inline tlp_txn& txn(tlm::tlm_generic_payload& gp) {
  return static_cast<tlp_txn&>(gp);
}
inline pcie::tlp_header& hdr(tlm::tlm_generic_payload& gp) {
  return txn(gp).ext.hdr;
}
inline pcie::tlp_meta& meta(tlm::tlm_generic_payload& gp) {
  return txn(gp).ext.meta;
}

class tlp_pool : public tlm::tlm_mm_interface {
 public:
  static tlp_pool& instance();
  // A fresh TLP with `h` as header and room for its payload; reference count 1.
  tlp_txn& make(const pcie::tlp_header& h, uint32_t stream);
  void free(tlm::tlm_generic_payload* gp) override;
  uint64_t created() const { return m_serial; }  // TLPs made so far (the run's TLP count)
  ~tlp_pool() override;

 private:
  std::vector<tlp_txn*> m_free;
  std::vector<tlp_txn*> m_all;
  uint64_t m_serial = 0;
};

}  // namespace p2psim::link
