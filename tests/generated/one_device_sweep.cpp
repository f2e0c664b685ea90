#include "tests/generated/one_device_sweep.h"

#include <algorithm>

#include <fmt/format.h>

namespace p2psim::oracle {

std::vector<sweep_case> one_device_sweep(
    const std::vector<p2psim::generate::platform_facts>& platforms) {
  struct shape {
    const char* op;
    unsigned tags, mrrs;
  };
  std::vector<shape> shapes;
  for (unsigned tags : {1u, 2u, 3u, 4u, 8u, 16u, 32u, 64u, 256u})
    for (unsigned mrrs : {128u, 512u, 4096u}) shapes.push_back({"read", tags, mrrs});
  shapes.push_back({"write", 1, 512});  // a write takes no tags: one will do
  std::vector<sweep_case> out;
  for (const auto& p : platforms)
    for (const shape& s : shapes)
      for (unsigned mps : {128u, 256u})
        for (const char* device : {"dma_engine", "gpu"}) {
          sweep_case c;
          c.name = fmt::format("sweep-{}", out.size());
          const std::string platform = p.name.empty() ? "" : ", platform: " + p.name;
          const int gen = std::min(p.max_gen, 5);
          const std::string memory =
              std::string(device) == "gpu" ? "bar1: 256MiB, vram: 1GiB" : "local_memory: 64MiB";
          c.summary = fmt::format(
              "{}: {} {}s 1 MiB of host memory{}, Gen{} x16, tags {}, MRRS {} B, MPS {} B", c.name,
              device, s.op, p.name.empty() ? "" : " (" + p.name + ")", gen, s.tags, s.mrrs, mps);
          c.topology_yaml = fmt::format(
              "# {}\nname: {}\npcie: {{mps: {}B, mrrs: {}B, tags: {}}}\nsockets:\n"
              "  - {{name: cpu0, memory: 64GiB{}}}\ndevices:\n  - {{name: d0, type: {}, {}}}\n"
              "links:\n  - {{up: cpu0, down: d0, gen: {}, width: 16, latency: 11ns}}\n",
              c.summary, c.name, mps, s.mrrs, s.tags, platform, device, memory, gen);
          c.scenario_yaml = fmt::format(
              "# {}\nname: {}\ntopology: {}.topology.yaml\ntransfers:\n"
              "  - {{name: t0, initiator: d0, target: cpu0, op: {}, size: 1MiB}}\n"
              "measure: {{bandwidth: true, latency: false}}\nverify: true\n",
              c.summary, c.name, c.name, s.op);
          out.push_back(std::move(c));
        }
  return out;
}

}  // namespace p2psim::oracle
