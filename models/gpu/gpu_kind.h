// The GPU as a device kind (`type: gpu`): its settings (gpu_spec.h), BAR1, VRAM.
#pragma once

#include "models/device/device_kind.h"

namespace p2psim::gpu {

const device::device_kind& kind();

}  // namespace p2psim::gpu
