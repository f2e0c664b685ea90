// Reads the program steps of CUDA IPC (docs/formats-scenario.md, "CUDA IPC"): a process
// exports a buffer's allocation as a named handle (cuIpcGetMemHandle), another opens the handle
// as a buffer of its own (cuIpcOpenMemHandle) and closes it (cuIpcCloseMemHandle).
#include <limits>

#include "sim/core/program_read.h"

namespace p2psim::core::detail {

namespace {
const std::set<std::string> ipc_calls = {"cuIpcGetMemHandle", "cuIpcOpenMemHandle",
                                         "cuIpcCloseMemHandle"};
}  // namespace

bool is_ipc_call(const std::string& call) {
  return ipc_calls.count(call) > 0;
}

const std::set<std::string>& ipc_call_names() {
  return ipc_calls;
}

void read_ipc_step(const config::node_reader& r, step_spec& s, program_names& names) {
  if (s.call == "cuIpcOpenMemHandle") {
    s.handle = r.str("handle");
    if (!names.ipc_handles.count(s.handle))
      r.fail("handle",
             "no IPC handle '" + s.handle + "' was named by an earlier cuIpcGetMemHandle");
    s.flags = uint32_t(r.integer("flags", 0, std::numeric_limits<uint32_t>::max(), 1));
    s.name = r.str("name");
    claim_name(r, "name", s.name, names);
    names.buffers.insert(s.name);
    return;
  }
  s.buffer = r.str("buffer");
  if (!names.buffers.count(s.buffer))
    r.fail("buffer", "no buffer '" + s.buffer + "' was allocated by an earlier cuMemAlloc");
  if (s.call == "cuIpcCloseMemHandle") return;
  s.offset = r.size("offset", 0);  // cuIpcGetMemHandle: any pointer into the allocation
  s.name = r.str("name");
  if (names.ipc_handles.count(s.name) || names.handles.count(s.name) ||
      names.descriptors.count(s.name))
    r.fail("name", "'" + s.name + "' already names a handle or a descriptor");
  names.ipc_handles.insert(s.name);
}

}  // namespace p2psim::core::detail
