// The pin/unpin cycles of p2psim bench --pins, run in this process against the driver models
// (pure C++, no SystemC): a fresh NVIDIA driver with one GPU (BAR1 of 256 MiB, 1 GiB of
// VRAM), the CUDA API model over it and the peer kmd. Each cycle pins one 64 KiB GPU page, so
// per-page costs stay out of the figure.
#pragma once

#include <cstdint>
#include <string>

#include "sim/bench/pins.h"

namespace p2psim::bench {

// `n` cycles of `kind` (pin_cycle_kinds()), timed at pin_checkpoints(n). A call that fails
// -> std::runtime_error naming it and the cycle.
pin_run run_pin_cycles(const std::string& kind, uint64_t n);

}  // namespace p2psim::bench
