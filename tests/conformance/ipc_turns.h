// `probe --ipc` against the model: the probe's exporter and importer (tools/cuda_probe/
// probe_ipc.h) as two simulated processes of the current OS, printing what the probe's
// two-process run prints.
#pragma once

#include <functional>
#include <string>

namespace p2psim::test {

void run_ipc_turns(const std::function<void(const std::string&)>& out);

}  // namespace p2psim::test
