// The GPU's factory (SystemC side of its device kind, gpu_kind.h): elaborates a gpu from its
// settings and place on the bus.
#pragma once

#include "models/device/device_model.h"
#include "models/gpu/gpu.h"

namespace p2psim::gpu {

const device::device_factory& factory();

// The GPU behind an elaborated device, or nullptr: for code that is about GPUs by nature (the
// driver model, BAR1 mappings).
gpu* gpu_of(device::device_model& d);

}  // namespace p2psim::gpu
