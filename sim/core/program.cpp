#include "sim/core/program.h"

#include <algorithm>
#include <set>

#include "models/gpu/gpu_spec.h"
#include "sim/config/error.h"
#include "sim/core/program_read.h"

namespace p2psim::core {

namespace {

using detail::program_names;

std::set<std::string> all_calls() {
  std::set<std::string> calls = {"cuInit",
                                 "cuCtxCreate",
                                 "cuCtxDestroy",
                                 "cuMemAlloc",
                                 "cuMemFree",
                                 "cuMemcpyHtoD",
                                 "cuMemcpyDtoH",
                                 "cuMemcpyDtoD",
                                 "cuCtxSynchronize",
                                 "register",
                                 "deregister",
                                 "dma",
                                 "wait_dma",
                                 "sleep",
                                 "exit",
                                 "link_down",
                                 "cuStreamCreate",
                                 "cuStreamSynchronize",
                                 "cuCtxSetCurrent",
                                 "cuCtxEnablePeerAccess",
                                 "cuCtxDisablePeerAccess"};
  calls.insert(detail::api_calls().begin(), detail::api_calls().end());
  calls.insert(detail::dma_buf_call_names().begin(), detail::dma_buf_call_names().end());
  calls.insert(detail::vmm_call_names().begin(), detail::vmm_call_names().end());
  calls.insert(detail::rdma_call_names().begin(), detail::rdma_call_names().end());
  calls.insert(detail::ipc_call_names().begin(), detail::ipc_call_names().end());
  for (const char* c : {"malloc", "free", "cuMemHostAlloc", "cuMemAllocHost", "cuMemFreeHost",
                        "cuMemHostRegister", "cuMemHostUnregister"})
    calls.insert(c);
  return calls;
}

step_spec read_step(const config::node_reader& r, program_names& names) {
  static const std::set<std::string> calls = all_calls();
  const auto& processes = names.processes;
  auto& buffers = names.buffers;
  auto& transfers = names.transfers;
  step_spec s;
  s.loc = r.loc();
  s.call = r.str("call");
  if (!calls.count(s.call)) {
    std::string list;
    for (const auto& c : calls) list += (list.empty() ? "" : ", ") + c;
    r.fail("call", "unknown call '" + s.call + "' (one of: " + list + ")");
  }
  // sleep, wait_dma, the callbacks check and the fault link_down belong to no process; the
  // others run as one.
  const bool needs_process =
      s.call != "sleep" && s.call != "wait_dma" && s.call != "link_down" && s.call != "callbacks";
  s.process = needs_process ? r.str("process") : r.str("process", "");
  if ((needs_process || !s.process.empty()) && !processes.count(s.process))
    r.fail("process", "no process '" + s.process + "' in `processes`");
  s.expect = r.str("expect", "ok");
  detail::check_result_name(r, "expect", s.expect);
  if (detail::is_api_call(s.call)) {
    detail::read_api_step(r, s, names);
    r.done();
    return s;
  }
  if (detail::is_host_call(s.call)) {
    detail::read_host_step(r, s, names);
    r.done();
    return s;
  }
  if (detail::is_dma_buf_call(s.call)) {
    detail::read_dma_buf_step(r, s, names);
    r.done();
    return s;
  }
  if (detail::is_vmm_call(s.call)) {
    detail::read_vmm_step(r, s, names);
    r.done();
    return s;
  }
  if (detail::is_ipc_call(s.call)) {
    detail::read_ipc_step(r, s, names);
    r.done();
    return s;
  }
  if (detail::is_rdma_call(s.call)) {
    detail::read_rdma_step(r, s, names);
    r.done();
    return s;
  }
  if (s.call == "dma" && r.has("mr")) {  // a remote peer's access through a memory region
    detail::read_mr_dma(r, s, names);
    r.done();
    return s;
  }
  if (s.call == "dma" && r.has("pin")) {  // through a pin's bus addresses, not the cache
    detail::read_pin_dma(r, s, names);
    r.done();
    return s;
  }
  auto buffer = [&] {
    s.buffer = r.str("buffer");
    if (!buffers.count(s.buffer))
      r.fail("buffer", "no buffer '" + s.buffer + "' was allocated by an earlier cuMemAlloc");
  };
  // The third-party driver's calls take GPU or host memory alike.
  auto any_buffer = [&] {
    s.buffer = r.str("buffer");
    if (!buffers.count(s.buffer) && !names.host_buffers.count(s.buffer))
      r.fail("buffer", "no buffer '" + s.buffer +
                           "' was allocated by an earlier cuMemAlloc, malloc, cuMemHostAlloc or "
                           "cuMemAllocHost");
  };
  if (s.call == "cuCtxCreate" || s.call == "link_down") s.device = r.str("device");
  if (s.call == "cuCtxCreate" && r.has("name")) {
    s.name = r.str("name");
    if (names.contexts.count(s.name) || names.streams.count(s.name) || buffers.count(s.name) ||
        names.copies.count(s.name) || transfers.count(s.name))
      r.fail("name", "'" + s.name + "' already names a context, a stream, a buffer or a copy");
    names.contexts.insert(s.name);
  }
  if (s.call == "cuCtxSetCurrent" || s.call == "cuCtxEnablePeerAccess" ||
      s.call == "cuCtxDisablePeerAccess") {
    s.context = r.str("context");
    if (!names.contexts.count(s.context))
      r.fail("context", "no context '" + s.context + "' was named by an earlier cuCtxCreate");
  }
  if (s.call == "cuMemAlloc") {
    s.name = r.str("name");
    if (names.host_buffers.count(s.name))
      r.fail("name", "'" + s.name + "' already names a host buffer");
    s.size = r.size("size");
    buffers.insert(s.name);
  }
  if (s.call == "cuMemFree") buffer();
  auto stream = [&] {
    s.stream = r.str("stream", "");
    if (!s.stream.empty() && !names.streams.count(s.stream))
      r.fail("stream", "no stream '" + s.stream + "' was made by an earlier cuStreamCreate");
  };
  if (s.call == "cuStreamCreate") {
    s.name = r.str("name");
    if (names.streams.count(s.name) || names.copies.count(s.name) || transfers.count(s.name) ||
        buffers.count(s.name))
      r.fail("name", "'" + s.name + "' already names a stream, a buffer, a dma step or a copy");
    names.streams.insert(s.name);
  }
  if (s.call == "cuStreamSynchronize") stream();
  if (s.call.rfind("cuMemcpy", 0) == 0) {
    buffer();
    s.offset = r.size("offset", 0);
    s.size = r.size("size", 0);  // 0: to the end of the buffer
    s.async = r.boolean("async", false);
    if (s.call != "cuMemcpyDtoD") {
      const std::string host = r.str("host", "pageable");
      if (names.host_buffers.count(host)) {
        s.host_buffer = host;
        s.host_offset = r.size("host_offset", 0);
      } else if (host == "pinned") {
        s.pinned = true;
      } else if (host != "pageable") {
        r.fail("host", "'" + host +
                           "' is neither pageable, pinned nor a host buffer of an earlier malloc, "
                           "cuMemHostAlloc or cuMemAllocHost");
      }
    }
    stream();
    if (!s.stream.empty() && !s.async)
      r.fail("stream", "a synchronous cuMemcpy runs on no stream of the caller's: add async: true");
    s.name = r.str("name", "");  // names the copy in the results
    s.since = r.str("since", "");
    if (!s.since.empty() && !names.copies.count(s.since))
      r.fail("since", "no earlier cuMemcpy step is named '" + s.since + "'");
    if (!s.since.empty() && s.name.empty())
      r.fail("since", "only a named copy is timed: give this step a name");
    s.after = r.str("after", "");
    if (!s.after.empty() && !names.copies.count(s.after))
      r.fail("after", "no earlier cuMemcpy step is named '" + s.after + "'");
    if (!s.after.empty() && s.name.empty())
      r.fail("after", "only a named copy is timed: give this step a name");
    if (!s.after.empty() && !s.since.empty())
      r.fail("after", "a copy is timed from one point: `since` or `after`, not both");
    if (!s.name.empty()) {
      if (names.copies.count(s.name) || transfers.count(s.name) || buffers.count(s.name) ||
          names.streams.count(s.name))
        r.fail("name", "'" + s.name + "' already names a buffer, a stream, a dma step or a copy");
      names.copies.insert(s.name);
    }
    if (s.call == "cuMemcpyDtoD") {
      s.to = r.str("to");
      if (!buffers.count(s.to)) r.fail("to", "no buffer '" + s.to + "' was allocated earlier");
    }
  }
  if (s.call == "register" || s.call == "deregister" || s.call == "dma") {
    any_buffer();
    s.offset = r.size("offset", 0);
    s.size = r.size("size", 0);  // 0: to the end of the buffer
  }
  if (s.call == "dma") {
    s.region = r.str("region", "");  // through an imported dma-buf, not the cache
    if (!s.region.empty() && !names.regions.count(s.region))
      r.fail("region", "no region '" + s.region + "' was named by an earlier dma_buf_import");
    detail::read_dma_options(r, s);
    s.name = r.str("name", "");
    if (!s.name.empty()) transfers.insert(s.name);
  }
  if (s.call == "wait_dma") {
    s.name = r.str("name");
    if (!transfers.count(s.name)) r.fail("name", "no earlier dma step is named '" + s.name + "'");
  }
  if (s.call == "sleep") s.time_ns = r.time_ns("time");
  r.done();
  return s;
}

}  // namespace

namespace detail {

void read_dma_options(const config::node_reader& r, step_spec& s) {
  s.write = r.choice("op", {"write", "read"}) == "write";
  s.count = int(r.integer("count", 1, 1'000'000, 1));
  s.every_ns = r.time_ns("every", 0);
  s.wait = r.boolean("wait", true);
  s.relaxed_ordering = r.boolean("relaxed_ordering", false);
  s.id_based_ordering = r.boolean("id_based_ordering", false);
}

}  // namespace detail

program_spec read_program(const config::node_reader& root) {
  program_spec p;
  if (auto d = root.optional_child("driver")) {
    p.driver.bar1_sharing = d->boolean("bar1_sharing", true);
    p.driver.null_callback = d->boolean("null_callback", false);
    p.driver.pin_ns = d->time_ns("pin_time", p.driver.pin_ns);
    p.driver.pin_page_ns = d->time_ns("pin_time_per_page", p.driver.pin_page_ns);
    p.driver.unpin_ns = d->time_ns("unpin_time", p.driver.unpin_ns);
    d->done();
  }
  if (auto d = root.optional_child("peer_driver")) {
    peer_spec s;
    s.loc = d->loc("device");
    s.device = d->str("device");
    s.dma_map = d->choice("dma_map", {"auto", "true", "false"}, "auto");
    s.path = d->choice("path", {"nv_p2p", "dma_buf"}, "nv_p2p");
    s.wait_in_callback = d->boolean("wait_in_callback", true);
    if (auto c = d->optional_child("regcache")) {
      s.cache = c->boolean("enabled", true);
      s.tag_check = c->boolean("tag_check", true);
      s.max_pinned = c->size("max_pinned", 0);
      s.max_entries = uint64_t(c->integer("max_entries", 0, 1'000'000'000, 0));
      s.policy = c->choice("policy", {"lru", "fifo"}, "lru");
      c->done();
    }
    d->done();
    p.peer = s;
  }
  program_names names;
  names.peer_driver = p.peer.has_value();
  if (root.has("processes"))
    for (const auto& name : root.string_list("processes")) {
      if (!names.processes.insert(name).second)
        root.fail("processes", "duplicate process '" + name + "'");
      p.processes.push_back(name);  // file order: the first is pid 100, the next 101, ...
    }
  for (const auto& s : root.optional_list("program")) {
    p.steps.push_back(read_step(s, names));
    const auto& st = p.steps.back();
    const bool through_cache =
        st.call == "register" || st.call == "deregister" || (st.call == "dma" && st.pin.empty());
    if (through_cache && !p.peer) s.fail("call", "`" + st.call + "` needs a `peer_driver` section");
  }
  return p;
}

}  // namespace p2psim::core

namespace p2psim::core {

namespace {

// A device a third-party kernel driver runs: one that starts DMAs and is not a GPU.
bool third_party_initiator(const topo::topology& t, const std::string& name) {
  const auto* d = t.find_device(name);
  return d && d->kind().initiates_dma() && !d->spec<gpu::gpu_spec>();
}

}  // namespace

// The socket above `node`: links up from it to the top.
const topo::socket_params* socket_above(const topo::topology& t, std::string node) {
  for (const topo::link_params* l; (l = t.link_above(node));) node = l->up;
  return t.find_socket(node);
}

void check_program(const program_spec& p, const topo::topology& t) {
  const std::string not_peer = "' is not a third-party DMA device (a DMA engine, ...) in ";
  // CUDA copies stage their host bytes in the top 256 MiB of the GPU's socket memory (as the
  // driver stages pageable memory; sim/core/copy_engine_executor.cpp).
  const bool copies = std::any_of(p.steps.begin(), p.steps.end(), [](const step_spec& s) {
    return s.call.rfind("cuMemcpy", 0) == 0;
  });
  constexpr uint64_t staging = 256ull << 20;
  if (p.peer && !third_party_initiator(t, p.peer->device))
    throw config::error(p.peer->loc, "device", "'" + p.peer->device + not_peer + t.file);
  for (const auto& s : p.steps) {
    if (s.call == "cuCtxCreate" || s.call == "cuMemCreate" || s.call == "cuMemSetAccess") {
      const auto* d = t.find_device(s.device);
      if (!d || !d->spec<gpu::gpu_spec>())
        throw config::error(s.loc, "device", "'" + s.device + "' is not a GPU in " + t.file);
      const topo::socket_params* socket = socket_above(t, s.device);
      if (copies && socket && socket->memory_bytes < staging)
        throw config::error(s.loc, "device",
                            "the program's cuMemcpy steps stage host bytes in the top 256 MiB of " +
                                s.device + "'s socket memory, and " + socket->name + " has " +
                                std::to_string(socket->memory_bytes >> 20) +
                                " MiB (its `memory`, " + topo::loc_of(*socket, "memory").str() +
                                ")");
    }
    if (!s.socket.empty() && !t.find_socket(s.socket))
      throw config::error(s.loc, "socket", "no socket '" + s.socket + "' in " + t.file);
    for (const auto& [key, engine] : {std::pair{"peer", s.peer}, {"mapping", s.mapping}})
      if (!engine.empty() && !third_party_initiator(t, engine))
        throw config::error(s.loc, key, "'" + engine + not_peer + t.file);
    if (s.call == "link_down" && std::none_of(t.links.begin(), t.links.end(),
                                              [&](const auto& l) { return l.down == s.device; }))
      throw config::error(s.loc, "device",
                          "no PCIe link has '" + s.device + "' below it in " + t.file);
  }
}

}  // namespace p2psim::core
