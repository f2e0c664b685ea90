// Reads the program steps of RDMA memory registration through nvidia-peermem (guide 6.7;
// docs/formats-scenario.md, "RDMA registration"): the program registers a range of a buffer
// with the peer driver's device as a memory region (ibv_reg_mr) and deregisters it
// (ibv_dereg_mr); `dma` with `mr:` is a remote peer's RDMA write or read that the device
// carries out through the region.
#include "sim/core/program_read.h"

namespace p2psim::core::detail {

namespace {

const std::set<std::string> rdma_calls = {"ibv_reg_mr", "ibv_dereg_mr"};

void memory_region(const config::node_reader& r, step_spec& s, const program_names& names) {
  s.mr = r.str("mr");
  auto it = names.mrs.find(s.mr);
  if (it == names.mrs.end())
    r.fail("mr", "no memory region '" + s.mr + "' was named by an earlier ibv_reg_mr");
  s.buffer = it->second;
}

}  // namespace

bool is_rdma_call(const std::string& call) {
  return rdma_calls.count(call) > 0;
}

const std::set<std::string>& rdma_call_names() {
  return rdma_calls;
}

void read_rdma_step(const config::node_reader& r, step_spec& s, program_names& names) {
  if (!names.peer_driver)
    r.fail("call", s.call + " registers with the RDMA device: the scenario needs a `peer_driver`");
  if (s.call == "ibv_dereg_mr") {
    memory_region(r, s, names);
    return;
  }
  s.buffer = r.str("buffer");  // ibv_reg_mr
  if (!names.buffers.count(s.buffer) && !names.host_buffers.count(s.buffer))
    r.fail("buffer", "no buffer '" + s.buffer + "' was allocated by an earlier step");
  s.offset = r.size("offset", 0);
  s.has_size = r.has("size");
  s.size = r.size("size", 0);  // without it: the rest of the buffer
  s.invalidation = r.boolean("invalidation", true);
  s.name = r.str("name");
  claim_name(r, "name", s.name, names);
  if (names.mrs.count(s.name) || names.pins.count(s.name) || names.regions.count(s.name) ||
      names.descriptors.count(s.name) || names.handles.count(s.name))
    r.fail("name", "'" + s.name +
                       "' already names a memory region, a pin, a region, a "
                       "descriptor or a handle");
  names.mrs[s.name] = s.buffer;
}

void read_mr_dma(const config::node_reader& r, step_spec& s, program_names& names) {
  memory_region(r, s, names);
  s.offset = r.size("offset", 0);  // from the region's start
  s.has_size = r.has("size");
  s.size = r.size("size", 0);  // without it: to the region's end
  read_dma_options(r, s);
  s.name = r.str("name", "");
  if (!s.name.empty()) {
    claim_name(r, "name", s.name, names);
    names.transfers.insert(s.name);
  }
}

}  // namespace p2psim::core::detail
