// The factories of the registered device kinds (SystemC side; registry.h is the plain side).
#pragma once

#include <string>

#include "models/device/device_model.h"

namespace p2psim::device {

// The factory of kind `name`; std::logic_error if none is registered (the kind list and the
// factory list come from the same kinds.cmake, so that is a build error, not an input error).
const device_factory& factory_for(const std::string& name);

}  // namespace p2psim::device
