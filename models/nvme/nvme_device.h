// The NVMe SSD's factory (SystemC side of its device kind, nvme_kind.h).
#pragma once

#include "models/device/device_model.h"

namespace p2psim::nvme {

const device::device_factory& factory();

}  // namespace p2psim::nvme
