// Reads the program steps of CUDA's virtual memory management (docs/formats-scenario.md,
// "VMM"): physical memory a step names as a handle (cuMemCreate), VA a step names as a buffer
// (cuMemAddressReserve) that every buffer step takes, mapping, access, unmapping and the frees.
#include "sim/core/program_read.h"

namespace p2psim::core::detail {

namespace {

const std::set<std::string> vmm_calls = {"cuMemCreate",      "cuMemRelease", "cuMemAddressReserve",
                                         "cuMemAddressFree", "cuMemMap",     "cuMemUnmap",
                                         "cuMemSetAccess"};

void reserved_buffer(const config::node_reader& r, step_spec& s, const program_names& names) {
  s.buffer = r.str("buffer");
  if (!names.reserved.count(s.buffer))
    r.fail("buffer", "no buffer '" + s.buffer + "' was reserved by an earlier cuMemAddressReserve");
}

void handle(const config::node_reader& r, step_spec& s, const program_names& names) {
  s.handle = r.str("handle");
  if (!names.handles.count(s.handle))
    r.fail("handle", "no handle '" + s.handle + "' was made by an earlier cuMemCreate");
}

}  // namespace

bool is_vmm_call(const std::string& call) {
  return vmm_calls.count(call) > 0;
}

const std::set<std::string>& vmm_call_names() {
  return vmm_calls;
}

void read_vmm_step(const config::node_reader& r, step_spec& s, program_names& names) {
  if (s.call == "cuMemCreate") {
    s.name = r.str("name");
    claim_name(r, "name", s.name, names);
    if (names.handles.count(s.name)) r.fail("name", "'" + s.name + "' already names a handle");
    names.handles.insert(s.name);
    s.size = r.size("size");
    s.device = r.str("device");
    s.rdma = r.boolean("gpu_direct_rdma", false);  // as CUmemAllocationProp: off unless asked
    return;
  }
  if (s.call == "cuMemRelease") {
    handle(r, s, names);
    return;
  }
  if (s.call == "cuMemAddressReserve") {
    s.name = r.str("name");
    claim_name(r, "name", s.name, names);
    if (names.handles.count(s.name)) r.fail("name", "'" + s.name + "' already names a handle");
    names.buffers.insert(s.name);
    names.reserved.insert(s.name);
    s.size = r.size("size");
    s.align = r.size("align", 0);
    return;
  }
  reserved_buffer(r, s, names);
  if (s.call == "cuMemAddressFree") return;
  s.offset = r.size("offset", 0);
  if (s.call == "cuMemMap") {
    handle(r, s, names);
    return;
  }
  s.has_size = r.has("size");
  s.size = r.size("size", 0);  // without it: the rest of the buffer
  if (s.call == "cuMemSetAccess") {
    s.device = r.str("device");
    s.access = r.choice("access", {"rw", "read", "none"}, "rw");
  }
}

}  // namespace p2psim::core::detail
