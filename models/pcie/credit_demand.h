// Burst fidelity: the credits one flow-control class on one direction of a link would have
// needed, TLP by TLP, to move as its bursts did. A TLP holds its receiver's credits for a
// credit loop (credit_loop.h). Those started within one loop of each other are in flight at
// once; a receiver that advertises fewer holds the sender back TLP by TLP, while bursts are
// held back only over the shortest loop (credit_window.h), so where the receiver holds TLPs
// longer they are not (docs/architecture.md, "Burst fidelity"). Each burst's TLPs are taken as
// evenly spread from its first TLP's start to its last's; the most in flight is taken at each
// burst's first and last TLP.
#pragma once

#include <cstdint>

#include "models/pcie/credit_loop.h"
#include "models/pcie/fifo.h"

namespace p2psim::pcie {

struct credit_need {
  uint32_t header = 0;  // TLPs
  uint32_t data = 0;    // data credits (16 B)
};

class credit_demand {
 public:
  // `loop`: the link's credit loop, with the time the receiver holds a TLP.
  explicit credit_demand(const credit_loop& loop = {}) : m_loop(loop) {}
  // A transmission of `tlps` TLPs carrying `data_credits` in all, its first TLP starting at
  // `first_ps`, its last at `last_ps`, each `tlp_ps` long on the wire.
  void sent(uint64_t first_ps, uint64_t last_ps, uint32_t tlps, uint32_t data_credits,
            uint64_t tlp_ps);
  const credit_need& most() const { return m_most; }  // the most in flight at once
  uint64_t longest_loop_ps() const { return m_longest_loop_ps; }

 private:
  struct run {
    uint64_t first_ps, last_ps;
    uint32_t tlps, data_credits;
  };
  // TLPs of `r` started in (t - loop, t], and their data credits.
  static credit_need in_window(const run& r, uint64_t t, uint64_t loop);
  void measure(uint64_t t, uint64_t loop);

  credit_loop m_loop;
  fifo<run> m_recent;  // by first TLP: those that may still be in flight
  credit_need m_most;
  uint64_t m_longest_loop_ps = 0;
};

}  // namespace p2psim::pcie
