// The NVIDIA driver model over an elaborated fabric: each GPU model becomes a device of the
// driver (BAR1 page table, VRAM, RDMA visibility), in topology order (= CUDA ordinals).
#pragma once

#include <vector>

#include "models/driver/nvidia/nvidia_driver.h"
#include "sim/core/system.h"

namespace p2psim::core {

// Adds every GPU of `sys` to `driver`; returns the GPU models by CUDA device ordinal.
std::vector<gpu::gpu*> add_gpus(nv::nvidia_driver& driver, fabric_system& sys);

}  // namespace p2psim::core
