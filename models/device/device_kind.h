// What a kind of endpoint device (a GPU, a DMA engine, an NVMe SSD) tells the simulator about
// itself, so that a kind plugs in from its own folder: the settings a topology gives one device
// of the kind (declared parameters), the BARs it asks enumeration for, whether it starts DMAs,
// how much memory it offers, its stats. Plain C++: topology loading and enumeration use it
// without SystemC; device_model.h is the SystemC side (elaboration). The simulator (sim/) talks
// to these interfaces only; models/CMakeLists.txt lists the registered kinds.
// docs/architecture.md, "Adding a device kind", walks through one.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/params/param.h"

namespace p2psim::device {

class device_kind;

// A BAR a kind asks enumeration for, besides the BAR0 every device has.
struct bar_request {
  std::string name;                 // as reports print it: "BAR1"
  std::string key;                  // the setting of its size ("bar1"); "<key>_address" places it
  uint64_t bytes = 0;               // 0: not exposed (only where `may_be_zero`)
  std::optional<uint64_t> address;  // unset: allocated by enumeration
  bool may_be_zero = false;
};

// The settings a topology gives one device of a kind: the kind's spec behind a face that does
// not need its type. Copyable through clone(); read and written through parameters().
class device_config {
 public:
  virtual ~device_config() = default;
  virtual const device_kind& kind() const = 0;
  virtual std::unique_ptr<device_config> clone() const = 0;
  virtual std::vector<params::bound> parameters() = 0;
  virtual std::vector<params::bound> parameters() const = 0;  // read-only
  virtual std::vector<bar_request> bars() const = 0;
  // A rule across settings that no single value's limits express: the key and the message of
  // the first broken one. "{key}" in the message stands for that setting's value as a file
  // writes it: "bar1_reserved ({bar1_reserved}) must be smaller than bar1 ({bar1})".
  struct problem {
    std::string key, message;
  };
  virtual std::optional<problem> check() const { return std::nullopt; }
  // Bytes a transfer may target on the device (0: it exposes none to peers).
  virtual uint64_t target_bytes() const = 0;
  // Bytes its DMAs move from and into (0: it starts none), and the setting that sizes them, for
  // the error when the machine cannot hold them.
  virtual uint64_t local_bytes() const = 0;
  virtual std::string local_key() const = 0;
  // The settings `p2psim topo --dot` shows next to the kind's title, as (label, key):
  // {"BAR1", "bar1"} gives "GPU, BAR1 256MiB".
  struct shown_setting {
    std::string label, key;
  };
  virtual std::vector<shown_setting> summary() const { return {}; }
};

class device_kind {
 public:
  virtual ~device_kind() = default;
  virtual std::string name() const = 0;   // the topology's `type:`, "nvme"
  virtual std::string title() const = 0;  // as reports print it, "NVMe SSD"
  virtual bool initiates_dma() const = 0;
  // Whether its DMAs may be PCIe AtomicOps (a GPU's copy engine, a NIC; not an SSD).
  virtual bool issues_atomics() const { return false; }
  // How `p2psim topo --dot` draws it (Graphviz node shape and style).
  struct graph_look {
    std::string shape = "box", style;
  };
  virtual graph_look look() const { return {}; }
  virtual std::unique_ptr<device_config> defaults() const = 0;
};

// Holds a kind's spec struct; spec_of() finds it behind a device_config.
template <class Spec>
struct spec_holder {
  virtual ~spec_holder() = default;
  Spec spec;
};

// A kind's config over its spec struct: the kind writes `kind()`, `bars()` and the rest;
// parameters and copying come from here. `Derived::table()`: the spec's declared parameters.
template <class Derived, class Spec>
class config_of : public device_config, public spec_holder<Spec> {
 public:
  using spec_holder<Spec>::spec;

  std::unique_ptr<device_config> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived&>(*this));
  }
  std::vector<params::bound> parameters() override { return params::bind(Derived::table(), spec); }
  std::vector<params::bound> parameters() const override {
    return params::bind(Derived::table(), spec);
  }
};

// The spec of a device's settings if they are of kind `Spec`, else nullptr: for code that is
// about one kind by nature (the GPU driver model, BAR1 sizing).
template <class Spec>
const Spec* spec_of(const device_config& c) {
  if (auto* s = dynamic_cast<const spec_holder<Spec>*>(&c)) return &s->spec;
  return nullptr;
}
template <class Spec>
Spec* spec_of(device_config& c) {
  if (auto* s = dynamic_cast<spec_holder<Spec>*>(&c)) return &s->spec;
  return nullptr;
}

// A device_config with value semantics (a copy clones it), for plain structs that hold one.
class config_value {
 public:
  config_value() = default;
  explicit config_value(std::unique_ptr<device_config> c) : m_config(std::move(c)) {}
  config_value(const config_value& o) : m_config(o.m_config ? o.m_config->clone() : nullptr) {}
  config_value& operator=(const config_value& o) {
    m_config = o.m_config ? o.m_config->clone() : nullptr;
    return *this;
  }
  config_value(config_value&&) = default;
  config_value& operator=(config_value&&) = default;

  explicit operator bool() const { return m_config != nullptr; }
  device_config& operator*() { return *m_config; }
  const device_config& operator*() const { return *m_config; }
  device_config* operator->() { return m_config.get(); }
  const device_config* operator->() const { return m_config.get(); }

 private:
  std::unique_ptr<device_config> m_config;
};

}  // namespace p2psim::device
