// Statistics of every module of a finished run as JSON, keyed by module name, with units in
// the key names (bytes, ps, ratio) so a reader needs no separate legend.
#pragma once

#include <nlohmann/json.hpp>

#include "sim/core/system.h"

namespace p2psim::core {

nlohmann::json dump_stats(fabric_system& sys, uint64_t simulated_ns);

}  // namespace p2psim::core
