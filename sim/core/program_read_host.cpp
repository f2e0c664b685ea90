// Reads the program steps on host memory: the program's own memory from the kernel (malloc,
// free), CUDA's page-locked memory (cuMemHostAlloc, cuMemAllocHost, cuMemFreeHost) and
// registration (cuMemHostRegister, cuMemHostUnregister). docs/formats-scenario.md, "Host
// memory".
#include <map>
#include <stdexcept>

#include "models/driver/cuda/cuda.h"
#include "sim/core/program_read.h"

namespace p2psim::core::detail {

namespace {

const std::set<std::string> host_calls = {"malloc",
                                          "free",
                                          "cuMemHostAlloc",
                                          "cuMemAllocHost",
                                          "cuMemFreeHost",
                                          "cuMemHostRegister",
                                          "cuMemHostUnregister"};

// `flags`: a list of the call's flag names (without their CU_MEMHOST..._ prefix), or numbers
// (an invalid value, to see what the API answers).
uint32_t read_flags(const config::node_reader& r, const std::map<std::string, uint32_t>& known) {
  uint32_t flags = 0;
  if (!r.has("flags")) return 0;
  for (const auto& f : r.string_list("flags")) {
    if (auto it = known.find(f); it != known.end()) {
      flags |= it->second;
      continue;
    }
    try {
      size_t used = 0;
      const unsigned long v = std::stoul(f, &used, 0);
      if (used == f.size() && v <= 0xFFFFFFFFul) {
        flags |= uint32_t(v);
        continue;
      }
    } catch (const std::exception&) {
    }
    std::string list;
    for (const auto& [name, value] : known) list += (list.empty() ? "" : ", ") + name;
    r.fail("flags", "unknown flag '" + f + "' (one of: " + list + ", or a number)");
  }
  return flags;
}

}  // namespace

bool is_host_call(const std::string& call) {
  return host_calls.count(call) > 0;
}

void claim_name(const config::node_reader& r, const std::string& key, const std::string& name,
                const program_names& names) {
  if (names.buffers.count(name) || names.host_buffers.count(name) || names.streams.count(name) ||
      names.copies.count(name) || names.transfers.count(name) || names.contexts.count(name))
    r.fail(key, "'" + name + "' already names a buffer, a context, a stream, a dma step or a copy");
}

void read_host_step(const config::node_reader& r, step_spec& s, program_names& names) {
  if (s.call == "malloc" || s.call == "cuMemHostAlloc" || s.call == "cuMemAllocHost") {
    s.name = r.str("name");
    claim_name(r, "name", s.name, names);
    s.size = r.size("size");
    s.socket = r.str("socket", "");
    if (s.call == "cuMemHostAlloc")
      s.flags = read_flags(r, {{"PORTABLE", CU_MEMHOSTALLOC_PORTABLE},
                               {"DEVICEMAP", CU_MEMHOSTALLOC_DEVICEMAP},
                               {"WRITECOMBINED", CU_MEMHOSTALLOC_WRITECOMBINED}});
    names.host_buffers.insert(s.name);
    return;
  }
  s.buffer = r.str("buffer");
  if (!names.host_buffers.count(s.buffer))
    r.fail("buffer", "no host buffer '" + s.buffer +
                         "' was allocated by an earlier malloc, cuMemHostAlloc or cuMemAllocHost");
  if (s.call == "cuMemHostRegister" || s.call == "cuMemHostUnregister") {
    s.offset = r.size("offset", 0);
    if (s.call == "cuMemHostRegister") {
      s.size = r.size("size", 0);  // 0: to the end of the buffer
      s.flags = read_flags(r, {{"PORTABLE", CU_MEMHOSTREGISTER_PORTABLE},
                               {"DEVICEMAP", CU_MEMHOSTREGISTER_DEVICEMAP},
                               {"IOMEMORY", CU_MEMHOSTREGISTER_IOMEMORY},
                               {"READ_ONLY", CU_MEMHOSTREGISTER_READ_ONLY}});
    }
  }
}

}  // namespace p2psim::core::detail
