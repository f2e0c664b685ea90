// Elaboration: a checked topology and its enumeration become SystemC modules, wired by
// links, with routing tables from the address map. One system per process (SystemC
// elaborates once).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/device/device_model.h"
#include "models/gpu/gpu.h"
#include "models/iommu/iommu.h"
#include "models/link/pcie_link.h"
#include "models/pcie/order_policy.h"
#include "models/root_complex/root_complex.h"
#include "models/switch/pcie_switch.h"
#include "models/transport/stream_log.h"
#include "models/transport/tlp_txn.h"
#include "sim/topology/address_map.h"
#include "sim/topology/topology.h"

namespace p2psim::core {

class fabric_system {
 public:
  // Burst fidelity: DMA engines move up to this many bytes per transaction, one 64 KiB BAR1
  // page (4 KiB, one I/O page, behind a translating IOMMU).
  static constexpr uint32_t burst_bytes = 64 * 1024;

  // `bursts`: DMAs in bursts (burst fidelity) rather than TLP by TLP. `order`: the ordering
  // table and choice source of this fabric's queues (all rules, in order, by default).
  fabric_system(const topo::topology& t, const topo::address_map& a, bool bursts = false,
                const pcie::order_policy& order = {});
  ~fabric_system();

  const topo::topology& topology() const { return m_topo; }
  const topo::address_map& addresses() const { return m_addr; }
  transport::stream_log& streams() { return m_log; }
  // Where this fabric's TLPs come from: how many it made (the run's TLP count), or one to
  // send by hand.
  transport::tlp_pool& pool() { return m_pool; }
  const transport::tlp_pool& pool() const { return m_pool; }
  const pcie::order_policy& order() const { return m_order; }

  // The device `name` of whatever kind; nullptr if there is none.
  device::device_model* find_device(const std::string& name);
  gpu::gpu* find_gpu(const std::string& name);  // nullptr if `name` is no GPU
  // The device `name` as a DMA initiator (a GPU's copy engine, a DMA engine, an SSD); nullptr
  // if it starts no DMA.
  dma::dma_initiator* find_initiator(const std::string& name);
  root_complex::root_complex* find_socket(const std::string& name);
  const root_complex::root_complex* find_socket(const std::string& name) const;
  // The IOMMU domain a device's DMA goes through (its socket's `iommu`), so a driver can map
  // I/O virtual addresses for it; nullptr when that IOMMU is off.
  iommu::iommu_domain* iommu_for(const std::string& device);

  struct named_link {
    std::string name;  // the node below it
    link::pcie_link* link;
  };
  struct named_interconnect {
    std::string name;
    link::interconnect_link* link;
  };
  const std::vector<named_link>& links() const { return m_link_list; }
  const std::vector<named_interconnect>& interconnects() const { return m_interconnect_list; }
  const std::map<std::string, std::unique_ptr<pcie_switch::pcie_switch>>& switches() const {
    return m_switches;
  }
  // For a run that stalled: each link direction with TLPs it cannot send, and why.
  std::vector<std::string> blocked_links() const;
  // Links whose receivers did not return exactly the credits their TLPs took, once the run
  // is over (link_channel::unbalanced_credits): a model error.
  std::vector<std::string> unbalanced_credits() const;

 private:
  void build_sockets();
  void build_switches();
  void build_devices();
  void build_links();
  void build_interconnects();
  void build_iommus();
  void tell_requester_mps();
  bool translating(const std::string& node) const;  // its socket's IOMMU translates
  transport::pcie_port& upstream_port_for(const topo::link_params& l, int index);
  transport::pcie_port& downstream_port_for(const std::string& node);

  // First, so it is destroyed after every module: a module may still hold TLPs then.
  transport::tlp_pool m_pool;
  const topo::topology& m_topo;
  const topo::address_map& m_addr;
  const bool m_bursts;
  const pcie::order_policy m_order;  // before the modules that keep references to it
  transport::stream_log m_log;
  std::map<std::string, std::unique_ptr<root_complex::root_complex>> m_sockets;
  std::map<std::string, std::unique_ptr<pcie_switch::pcie_switch>> m_switches;
  std::map<std::string, std::unique_ptr<device::device_model>> m_devices;
  std::vector<std::unique_ptr<link::pcie_link>> m_links;
  std::vector<std::unique_ptr<link::interconnect_link>> m_interconnects;
  std::vector<named_link> m_link_list;
  std::vector<named_interconnect> m_interconnect_list;
};

}  // namespace p2psim::core
