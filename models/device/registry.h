// The registered device kinds (models/device/kinds.cmake lists them; the build generates the
// list). A topology's `type:` names one.
#pragma once

#include <string>
#include <vector>

#include "models/device/device_kind.h"

namespace p2psim::device {

// In the order kinds.cmake lists them.
const std::vector<const device_kind*>& kinds();
const device_kind* find_kind(const std::string& name);  // nullptr: no such kind
std::vector<std::string> kind_names();

}  // namespace p2psim::device
