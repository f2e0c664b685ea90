// The DMA engine's factory (SystemC side of its device kind, dma_engine_kind.h).
#pragma once

#include "models/device/device_model.h"

namespace p2psim::dma_engine {

const device::device_factory& factory();

}  // namespace p2psim::dma_engine
