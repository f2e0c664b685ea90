// The NVMe SSD as a device kind (`type: nvme`): its settings (nvme_spec.h). It exposes no
// memory to peers (no Controller Memory Buffer): it is a transfer's initiator only.
#pragma once

#include "models/device/device_kind.h"

namespace p2psim::nvme {

const device::device_kind& kind();

}  // namespace p2psim::nvme
