// The SystemC side of a device kind (device_kind.h is the plain side): what elaboration hands
// a device, what the simulation sees of it once built, and the factory a kind registers to build
// it. sim/core/system.cpp builds every device through these; nothing there names a kind.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "models/device/device_kind.h"
#include "models/dma/dma_initiator.h"
#include "models/dma/dma_requester.h"
#include "models/memory/backing_store.h"
#include "models/pcie/device_control.h"
#include "models/pcie/order_policy.h"
#include "models/pcie/window.h"
#include "models/stats/stat.h"
#include "models/transport/pcie_port.h"
#include "models/transport/stream_log.h"
#include "models/transport/tlp_txn.h"

namespace p2psim::device {

// What elaboration hands a device: where it sits on the bus and the fabric it lives in.
struct placement {
  std::string name;
  uint16_t bdf = 0;
  pcie::window bar0;
  std::vector<pcie::window> bars;   // one per bar_request, in order (size 0 where not exposed)
  pcie::device_control control;     // MPS, MRRS, RCB, tags after the topology's defaults
  dma::requester_params requester;  // bdf, MPS, MRRS, tags and, at burst fidelity, burst size
  transport::tlp_pool* pool = nullptr;
  transport::stream_log* log = nullptr;
  const pcie::order_policy* order = nullptr;
};

// Memory a BAR exposes to peers one to one (a NIC's on-board memory): where a transfer that
// targets the device finds its bytes.
struct exposed_memory {
  memory::backing_store* store = nullptr;  // nullptr: the device exposes none this way
  uint64_t bus_base = 0;
};

// A device once elaborated: what the fabric wires and the simulation drives.
class device_model {
 public:
  virtual ~device_model() = default;
  // The SystemC module (for its name and for what only its kind's own code knows).
  virtual sc_core::sc_module& module() = 0;
  virtual transport::pcie_port& port() = 0;
  virtual dma::dma_initiator* initiator() = 0;  // nullptr: the device starts no DMA
  virtual exposed_memory exposed() { return {}; }
  // The kind's stats and extra figures, as the results list them under `devices.<name>`
  // (the requester's and the IOMMU's are added by the simulator).
  virtual std::vector<stats::reading> stats(uint64_t simulated_ps) const = 0;
};

// The device_model of a module that owns its `port` and is its own dma::dma_initiator (every
// kind so far): `read_stats` gives its stats. A kind that exposes memory derives from it.
template <class Module>
class initiator_model : public device_model {
 public:
  using stats_reader = std::function<std::vector<stats::reading>(const Module&, uint64_t)>;
  initiator_model(std::unique_ptr<Module> m, stats_reader read_stats)
      : m_module(std::move(m)), m_read_stats(std::move(read_stats)) {}
  Module& model() { return *m_module; }
  sc_core::sc_module& module() override { return *m_module; }
  transport::pcie_port& port() override { return m_module->port; }
  dma::dma_initiator* initiator() override { return m_module.get(); }
  std::vector<stats::reading> stats(uint64_t simulated_ps) const override {
    return m_read_stats(*m_module, simulated_ps);
  }

 private:
  std::unique_ptr<Module> m_module;
  stats_reader m_read_stats;
};

// How a kind builds its model; registered next to its device_kind.
class device_factory {
 public:
  virtual ~device_factory() = default;
  virtual std::string kind() const = 0;  // device_kind::name()
  virtual std::unique_ptr<device_model> elaborate(const device_config& settings,
                                                  const placement& where) const = 0;
  // Every stat its models report, for docs and `p2psim params`.
  virtual std::vector<const stats::declaration*> stat_declarations() const = 0;
};

}  // namespace p2psim::device
