#include "sim/litmus/litmus_run.h"

#include "models/driver/nvidia/nvidia_driver.h"
#include "models/gpu/gpu_spec.h"
#include "models/root_complex/cpu_cache.h"
#include "sim/config/error.h"

namespace p2psim::litmus {

// What a litmus file asks of its topology: memories that exist and hold the locations, agents
// on devices of the right kind, accesses each kind of agent can make.
void check_litmus(const litmus_spec& t, const topo::topology& topo) {
  auto is_gpu = [&](const std::string& n) {
    auto* d = topo.find_device(n);
    return d && d->spec<gpu::gpu_spec>();
  };
  auto starts_dma = [&](const std::string& n) {
    auto* d = topo.find_device(n);
    return d && d->kind().initiates_dma();
  };
  for (const auto& s : topo.sockets)
    if (s.iommu.mode == iommu::iommu_mode::translating)
      throw config::error(t.loc, "topology",
                          "socket " + s.name +
                              " has a translating IOMMU: litmus tests run "
                              "with the IOMMU off or in pass-through");
  for (const auto& l : t.locations) {
    auto fail = [&](const std::string& m) { throw config::error(l.loc, "memory", m); };
    if (is_gpu(l.memory)) {
      if (l.offset + l.size > nv::gpu_page_bytes)
        fail("a GPU location lies within one 64KiB GPU page (offset + size <= 64KiB)");
    } else if (const auto* d = topo.find_device(l.memory)) {
      // Memory a BAR exposes one to one (a DMA engine's BAR2).
      const uint64_t exposed = d->settings->target_bytes();
      if (l.offset + l.size > exposed)
        fail(l.memory + " exposes " + std::to_string(exposed) +
             " bytes of memory to peers: the location does not fit");
    } else if (const auto* s = topo.find_socket(l.memory)) {
      if (l.offset + l.size > s->memory_bytes) fail("beyond " + l.memory + "'s memory");
    } else {
      fail("'" + l.memory + "' is not a device or socket of the topology");
    }
  }
  for (size_t i = 0; i < t.locations.size(); ++i)
    for (size_t j = 0; j < i; ++j) {
      const auto &a = t.locations[i], &b = t.locations[j];
      if (a.memory == b.memory && !is_gpu(a.memory) && a.offset < b.offset + b.size &&
          b.offset < a.offset + a.size)
        throw config::error(a.loc, "offset", "overlaps location " + b.name);
    }
  // CPUs cache host memory by 64 B lines, which a No Snoop write leaves stale: each host
  // location then has lines of its own (the reference model keeps a cache per location).
  bool no_snoop = false;
  for (const auto& a : t.agents)
    for (const auto& o : a.program) no_snoop |= o.no_snoop;
  for (size_t i = 0; i < t.locations.size() && no_snoop; ++i)
    for (size_t j = 0; j < i; ++j) {
      const auto &a = t.locations[i], &b = t.locations[j];
      constexpr uint64_t line = root_complex::cpu_cache::line_bytes;
      if (a.memory == b.memory && topo.find_socket(a.memory) &&
          a.offset / line <= (b.offset + b.size - 1) / line &&
          b.offset / line <= (a.offset + a.size - 1) / line)
        throw config::error(a.loc, "offset",
                            "shares a 64 B cache line with location " + b.name +
                                " in a test with no_snoop writes: give each its own lines");
    }
  for (const auto& a : t.agents) {
    auto fail = [&](const std::string& key, const std::string& m) {
      throw config::error(a.loc, key, m);
    };
    switch (a.kind) {
      case agent_kind::dma:
        if (!starts_dma(a.device))
          fail("device",
               "a dma agent runs on a device that starts DMAs (a GPU's copy engine, a DMA "
               "engine, ...)");
        break;
      case agent_kind::kernel:
        if (!is_gpu(a.device)) fail("device", "a kernel agent runs on a GPU");
        break;
      case agent_kind::cpu:
        if (!topo.find_socket(a.device)) fail("device", "a cpu agent runs on a socket");
        if (!a.context.empty() && !is_gpu(a.context))
          fail("context", "the context's device is a GPU");
        break;
    }
    for (const auto& o : a.program) {
      if (o.location.empty()) continue;
      const location_spec& l = *t.find_location(o.location);
      auto bad = [&](const std::string& m) { throw config::error(o.loc, "program", m); };
      if (o.kind == op_kind::atomic && a.kind == agent_kind::dma &&
          !topo.find_device(a.device)->kind().issues_atomics())
        bad(a.device + " issues no PCIe AtomicOps (type " +
            topo.find_device(a.device)->kind().name() + ")");
      if (a.kind == agent_kind::kernel && !is_gpu(l.memory))
        bad("a kernel agent reads and writes GPU memory only (" + l.name + " is in " + l.memory +
            ")");
      if (a.kind == agent_kind::cpu && o.kind != op_kind::copy && !topo.find_socket(l.memory))
        bad("a cpu agent loads and stores host memory only (" + l.name + " is in " + l.memory +
            ")");
      if (o.kind == op_kind::copy && (!is_gpu(l.memory) || !is_gpu(t.find_location(o.to)->memory)))
        bad("copy is cuMemcpyDtoD: both locations in GPU memory");
      if (a.kind == agent_kind::dma && l.memory == a.device &&
          (o.relaxed_ordering || o.id_based_ordering || o.no_snoop || o.traffic_class))
        bad("relaxed_ordering / id_based_ordering / no_snoop / traffic_class are attributes of "
            "PCIe requests; " +
            l.name + " is the agent's own memory");
      if ((o.no_snoop || o.traffic_class) && a.kind != agent_kind::dma)
        bad(std::string(o.no_snoop ? "no_snoop" : "traffic_class") +
            " is an attribute of a DMA agent's PCIe requests");
    }
  }
}

}  // namespace p2psim::litmus
