// Reads the program steps of the dma-buf path (GPUDirect RDMA 13.3, 4.1): the program exports
// GPU memory as a descriptor (cuMemGetHandleForAddressRange) and closes descriptors; the
// device's kernel driver imports one as a region (dma_buf_import) and lets it go
// (dma_buf_release); `dma` with `region:` moves bytes through an imported region instead of the
// registration cache. docs/formats-scenario.md, "dma-buf".
#include <limits>

#include "sim/core/program_read.h"

namespace p2psim::core::detail {

namespace {

const std::set<std::string> dma_buf_calls = {"cuMemGetHandleForAddressRange", "close",
                                             "dma_buf_import", "dma_buf_release"};

void fresh_name(const config::node_reader& r, const std::string& key, const std::string& name,
                const program_names& names) {
  if (names.descriptors.count(name) || names.regions.count(name) || names.buffers.count(name) ||
      names.host_buffers.count(name) || names.pins.count(name))
    r.fail(key, "'" + name + "' already names a buffer, a pin, a descriptor or a region");
}

void descriptor(const config::node_reader& r, step_spec& s, const program_names& names) {
  s.fd = r.str("fd");
  if (!names.descriptors.count(s.fd))
    r.fail("fd",
           "no descriptor '" + s.fd + "' was named by an earlier cuMemGetHandleForAddressRange");
}

}  // namespace

bool is_dma_buf_call(const std::string& call) {
  return dma_buf_calls.count(call) > 0;
}

const std::set<std::string>& dma_buf_call_names() {
  return dma_buf_calls;
}

void read_dma_buf_step(const config::node_reader& r, step_spec& s, program_names& names) {
  if (s.call == "cuMemGetHandleForAddressRange") {
    s.buffer = r.str("buffer");
    if (!names.buffers.count(s.buffer) && !names.host_buffers.count(s.buffer))
      r.fail("buffer", "no buffer '" + s.buffer + "' was allocated by an earlier step");
    s.offset = r.size("offset", 0);
    s.has_size = r.has("size");
    s.size = r.size("size", 0);  // without it: the rest of the buffer
    s.flags = uint32_t(r.integer("flags", 0, std::numeric_limits<uint32_t>::max(), 0));
    s.name = r.str("name");
    fresh_name(r, "name", s.name, names);
    names.descriptors.insert(s.name);
    return;
  }
  if (s.call == "close") {
    descriptor(r, s, names);
    return;
  }
  if (!names.peer_driver)
    r.fail("call", s.call + " is the device's kernel driver's: the scenario needs a `peer_driver`");
  if (s.call == "dma_buf_import") {
    descriptor(r, s, names);
    s.name = r.str("name");
    fresh_name(r, "name", s.name, names);
    names.regions.insert(s.name);
    return;
  }
  s.region = r.str("region");  // dma_buf_release
  if (!names.regions.count(s.region))
    r.fail("region", "no region '" + s.region + "' was named by an earlier dma_buf_import");
}

}  // namespace p2psim::core::detail
