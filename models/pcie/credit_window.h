// Burst fidelity: a class's TLPs on one direction of a link start no more densely than the
// receiver's credits let them TLP by TLP. A TLP's credits come back no sooner than a credit
// loop after it started (credit_loop.h, with the receiver's least hold), so within any loop
// at most as many TLPs start as the receiver advertises headers for, and at most as many
// data credits. Bursts are double-buffered (credits.h, can_start_burst): without this, a
// receiver that advertises less than a loop's worth held TLP fidelity back but let bursts
// through at the link's rate, many times what its credits allow (tests/generated checks
// that bound with its own arithmetic).
#pragma once

#include <cstdint>

#include "models/pcie/credit_loop.h"
#include "models/pcie/fifo.h"

namespace p2psim::pcie {

class credit_window {
 public:
  // `headers`, `data`: what the receiver advertises (0: infinite); `loop`: the shortest loop
  // (the receiver's least hold: a switch's latency; an endpoint or root port, none known).
  credit_window(uint32_t headers, uint32_t data, const credit_loop& loop);
  bool limits() const { return m_headers || m_data; }
  // A transmission of `tlps` TLPs carrying `data_credits` in all, which would start its first
  // TLP at `first_ps` and each next one `spacing_ps` later, and whose TLP k is ready here no
  // sooner than `ready_ps` + k / (tlps - 1) of `lag_ps`: records when each of them starts
  // within the window and returns when the last one does. `symbols_ps`: one TLP's own
  // symbols, which a receiver must have in before it frees the TLP. `hold_ps`: the least
  // time the receiver holds these TLPs, if it is sure to hold them longer than the loop says.
  uint64_t place(uint64_t first_ps, uint32_t tlps, uint32_t data_credits, uint64_t spacing_ps,
                 uint64_t ready_ps, uint64_t lag_ps, uint64_t symbols_ps, uint64_t hold_ps = 0);

 private:
  // TLPs that started `step_ps` apart, whose credits are back from `back_ps` on, each
  // carrying `data` data credits.
  struct run {
    uint64_t back_ps, step_ps;
    uint32_t count, data;
  };
  void back_by(uint64_t t);
  void take_back(uint32_t tlps);  // of the oldest run
  void push(uint64_t first_ps, uint64_t step_ps, uint32_t tlps, uint32_t data, uint64_t loop);

  uint32_t m_headers, m_data;
  credit_loop m_loop;
  fifo<run> m_recent;                  // TLPs whose credits may not be back yet, oldest first
  uint32_t m_out = 0, m_data_out = 0;  // how many, and their data credits
};

}  // namespace p2psim::pcie
