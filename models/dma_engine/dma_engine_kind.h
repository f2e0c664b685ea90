// The third-party DMA engine as a device kind (`type: dma_engine`): its settings
// (engine_spec.h), optional BAR2 on-board memory.
#pragma once

#include "models/device/device_kind.h"

namespace p2psim::dma_engine {

const device::device_kind& kind();

}  // namespace p2psim::dma_engine
