// Topology files -> topo::topology: every key, platform presets, --set overrides.
#include <catch2/catch.hpp>

#include <filesystem>

#include "models/dma_engine/engine_spec.h"
#include "models/gpu/gpu_spec.h"
#include "sim/topology/parameters.h"
#include "sim/topology/topology_loader.h"

using namespace p2psim;
using namespace p2psim::topo;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;

namespace {

const std::string k_dir = std::string(P2PSIM_SOURCE_DIR) + "/tests/data/topologies/";

topology load(const std::string& name, const std::vector<std::string>& sets = {}) {
  load_options o{{k_dir + "platforms"}, {}};
  for (const auto& s : sets) o.overrides.push_back(config::parse_override(s));
  return load_topology(k_dir + name, o);
}

template <class F>
config::error error_of(F&& f) {
  try {
    f();
  } catch (const config::error& e) {
    return e;
  }
  FAIL("expected a config::error");
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("topology loader: switch_only fixture", "[topology][loader]") {
  topology t = load("good/switch_only.yaml");
  CHECK(t.name == "switch_only");
  CHECK_THAT(t.description, Contains("GPUDirect RDMA 13.3"));
  REQUIRE(t.sockets.size() == 1);
  CHECK(t.sockets[0].platform_name == "tiny_gen4");
  CHECK(t.sockets[0].platform.max_gen == 4);
  CHECK(t.sockets[0].memory_bytes == 64ull << 30);
  REQUIRE(t.devices.size() == 2);
  CHECK(t.devices[0].kind().name() == "gpu");
  CHECK(t.devices[1].kind().name() == "dma_engine");
  CHECK(t.devices[1].spec<dma_engine::engine_spec>()->bar2_bytes == 64ull << 20);
  CHECK(t.devices[0].spec<gpu::gpu_spec>()->rdma_ordering ==
        gpu::writes_ordering::owner);  // the default
  CHECK(t.link_above("nic0")->width == 8);
  CHECK(t.link_above("cpu0") == nullptr);
  CHECK(t.find_switch("sw0")->ports == 4);
  CHECK(t.links_below("sw0").size() == 2);
  CHECK(t.sockets[0].loc.str() == k_dir + "good/switch_only.yaml:6:5");
  CHECK(loc_of(t.links[2], "gen").str() == k_dir + "good/switch_only.yaml:17:32");
}

TEST_CASE("topology loader: every key maps onto its field", "[topology][loader]") {
  topology t = load("good/full.yaml");
  CHECK(t.pcie.mps == 128);
  CHECK(t.pcie.mrrs == 1024);
  CHECK(t.pcie.rcb == 128);
  CHECK(t.pcie.tags == 32);
  const socket_params& s = t.sockets[0];
  CHECK(s.host_bridges == 1);
  CHECK(s.memory_bytes == 8ull << 30);
  // Preset values, with this socket's overrides on top.
  CHECK(s.platform_name == "tiny_gen3");
  const root_complex::platform_spec& p = s.platform;
  CHECK(p.max_gen == 3);
  CHECK(p.rc_latency_ns == 150);
  CHECK(p.p2p.tlp_bytes == 64);
  CHECK(p.p2p.latency_ns == 300);
  CHECK(p.p2p.write.routed);
  CHECK(p.p2p.write.bandwidth_gbs == Approx(5.2));
  CHECK(p.p2p.read.outstanding == 4);  // overridden from 2
  CHECK(p.p2p.read.bandwidth_gbs == 0);
  CHECK(p.memory.latency_ns == 80);  // overridden from 90
  CHECK(p.memory.bandwidth_gbs == 40);
  CHECK(p.memory.cpl_bytes == 64);
  CHECK(p.interconnect.bandwidth_gbs == Approx(19.2));  // overridden from 16
  CHECK(p.interconnect.latency_ns == 100);
  CHECK(p.interconnect_p2p_write.bandwidth_gbs == Approx(0.25));
  CHECK_FALSE(p.interconnect_p2p_read.routed);
  CHECK(p.interconnect_p2p_read.outstanding == 1);
  // The socket's IOMMU (GPUDirect RDMA 13.3, 5.4 IOMMUs).
  CHECK(s.iommu.mode == iommu::iommu_mode::translating);
  CHECK(s.iommu.page_bytes == 64 * 1024);
  CHECK(s.iommu.iotlb_entries == 32);
  CHECK(s.iommu.miss_latency_ns == 500);
  CHECK(t.sockets[1].iommu.mode == iommu::iommu_mode::off);  // default
  // A socket without a platform gets the built-in defaults.
  CHECK(t.sockets[1].platform_name.empty());
  CHECK(t.sockets[1].platform.max_gen == root_complex::platform_spec{}.max_gen);

  const interconnect_params& ic = t.interconnects[0];
  CHECK(ic.a == "cpu0");
  CHECK(ic.b == "cpu1");
  // Unset: the first socket's platform values.
  CHECK(ic.bandwidth_gbs == Approx(19.2));
  CHECK(ic.latency_ns == 100);

  const switch_params& sw = t.switches[0];
  CHECK(sw.latency_ns == 150);
  CHECK_FALSE(sw.cut_through);
  CHECK(sw.acs_redirect);
  CHECK(sw.ports == 2);

  const device_params& g = *t.find_device("gpu0");
  CHECK(g.bar0_bytes == 32ull << 20);
  CHECK(g.spec<gpu::gpu_spec>()->bar1_bytes == 1ull << 30);
  CHECK(g.spec<gpu::gpu_spec>()->bar1_reserved_bytes == 64ull << 20);
  CHECK(g.spec<gpu::gpu_spec>()->vram_bytes == 24ull << 30);
  CHECK(g.spec<gpu::gpu_spec>()->vram_latency_ns == 250);
  CHECK(g.spec<gpu::gpu_spec>()->vram_bandwidth_gbs == Approx(1200));
  CHECK(g.control.mps == 512);
  CHECK(g.control.mrrs == 4096);
  CHECK(g.control.rcb == 64);
  CHECK(g.control.tags == 768);
  CHECK(g.bar0_address == 0x400080000000ull);
  CHECK(g.spec<gpu::gpu_spec>()->bar1_address == 0x400040000000ull);
  CHECK(g.spec<gpu::gpu_spec>()->rdma_ordering == gpu::writes_ordering::none);

  const device_params& n = *t.find_device("nic0");
  CHECK(n.control.tags == 128);
  CHECK(n.bar0_bytes == 1ull << 20);
  CHECK(n.spec<dma_engine::engine_spec>()->bar2_bytes == 64ull << 20);
  CHECK(n.spec<dma_engine::engine_spec>()->local_memory_bytes == 2ull << 30);
  CHECK(n.spec<dma_engine::engine_spec>()->descriptor_latency_ns == 40);
  CHECK(n.spec<dma_engine::engine_spec>()->bar2_address == 0x480000000000ull);
  CHECK(n.control.mps == 128);  // topology default
  CHECK(n.control.rcb == 128);

  const link_params& l = t.links[0];
  CHECK(l.gen == 3);
  CHECK(l.width == 16);
  CHECK(l.host_bridge == 0);
  CHECK(l.latency_ns == 7);
  CHECK(l.ecrc);
  CHECK(l.ack_limit == 1000);
  CHECK(l.fc_limit == 2000);
  CHECK(l.credits.ph == 32);
  CHECK(l.credits.pd == 512);
  CHECK(l.credits.nph == 16);
  CHECK(l.credits.npd == 32);
  CHECK(l.credits.cplh == 0);
  CHECK(l.credits.cpld == 0);
  // Defaults where the file says nothing.
  CHECK(t.links[1].latency_ns == link_params{}.latency_ns);
  CHECK(t.links[1].credits.ph == link::link_spec{}.credits.ph);
}

TEST_CASE("topology loader: --set overrides", "[topology][loader]") {
  topology t = load("good/switch_only.yaml",
                    {"link.gpu0.gen=3", "device.gpu0.bar1=512MiB", "switch.sw0.latency=200ns",
                     "socket.cpu0.root_complex.p2p.read.outstanding=4", "pcie.mps=512B",
                     "device.nic0.descriptor_latency=1us"});
  CHECK(t.link_above("gpu0")->gen == 3);
  CHECK(t.find_device("gpu0")->spec<gpu::gpu_spec>()->bar1_bytes == 512ull << 20);
  CHECK(t.find_switch("sw0")->latency_ns == 200);
  CHECK(t.sockets[0].platform.p2p.read.outstanding == 4);
  CHECK(t.pcie.mps == 512);
  CHECK(t.find_device("nic0")->spec<dma_engine::engine_spec>()->descriptor_latency_ns == 1000);
  CHECK(load("good/two_sockets.yaml", {"interconnect.qpi0.bandwidth=10GB/s"})
            .interconnects[0]
            .bandwidth_gbs == Approx(10));
  CHECK(
      load("good/single_rc.yaml", {"socket.cpu0.platform=tiny_gen4"}).sockets[0].platform.max_gen ==
      4);
}

TEST_CASE("topology loader: override errors point at the --set", "[topology][loader]") {
  CHECK_THAT(error_of([] { load("good/switch_only.yaml", {"link.gpu0.gen=fast"}); }).what(),
             Equals("--set link.gpu0.gen=fast: error: gen: expected an integer from 1 to 5, got "
                    "'fast'"));
  CHECK_THAT(error_of([] { load("good/switch_only.yaml", {"link.gpu9.gen=4"}); }).what(),
             Contains("--set link.gpu9.gen=4: error: no element of 'links' has down 'gpu9'"));
  CHECK_THAT(error_of([] { load("good/switch_only.yaml", {"device.gpu0.vramm=1GiB"}); }).what(),
             Contains("--set device.gpu0.vramm=1GiB: error: unknown key 'vramm'"));
  CHECK_THAT(error_of([] { load("good/switch_only.yaml", {"runs=4"}); }).what(),
             Contains("--set runs=4: error: not a topology setting"));
  CHECK_THAT(error_of([] { load("good/switch_only.yaml", {"socket.cpu0.platform=nope"}); }).what(),
             Contains("--set socket.cpu0.platform=nope: error: platform: unknown platform 'nope'"));
  // Switching cpu0 to a Gen3 platform makes the file's Gen4 root port invalid.
  config::error e =
      error_of([] { load("good/switch_only.yaml", {"socket.cpu0.platform=tiny_gen3"}); });
  CHECK_THAT(e.what(), Contains("switch_only.yaml:15:32: error: gen: root port of cpu0 (platform "
                                "tiny_gen3) supports up to Gen3, got Gen4"));
}

// docs/formats-topology.md, "Mixed platforms": a machine's sockets share one CPU family.
TEST_CASE("topology loader: sockets of different platforms need mixed_platforms",
          "[topology][loader][platform]") {
  // A --set on one socket is the usual way into a mix: the error points at it, whichever socket.
  CHECK_THAT(
      error_of([] { load("good/two_sockets.yaml", {"socket.cpu1.platform=tiny_gen4"}); }).what(),
      Contains("--set socket.cpu1.platform=tiny_gen4: error: platform: socket cpu1 uses "
               "platform 'tiny_gen4' and socket cpu0 'tiny_gen3'"));
  CHECK_THAT(
      error_of([] { load("good/two_sockets.yaml", {"socket.cpu0.platform=tiny_gen4"}); }).what(),
      Contains("--set socket.cpu0.platform=tiny_gen4: error: platform: socket cpu0 uses "
               "platform 'tiny_gen4' and socket cpu1 'tiny_gen3'"));
  // No preset is a platform of its own, the built-in defaults (full.yaml mixes them).
  CHECK_THAT(load("good/full.yaml").warnings.at(0),
             Contains("(cpu0 'tiny_gen3', cpu1 the built-in defaults)"));
  // The same preset everywhere: no warning, every socket keeps its own policy.
  topology same = load("good/two_sockets.yaml");
  CHECK(same.warnings.empty());
  CHECK(same.sockets[1].platform.interconnect_p2p_read.routed == false);
}

TEST_CASE("topology loader: mixed platforms cross by the stricter policy and warn",
          "[topology][loader][platform]") {
  topology t = load("good/mixed_platforms.yaml");
  CHECK(t.mixed_platforms);
  // tiny_gen3 caps writes at 0.25 GB/s and does not route reads; tiny_gen4 (the built-in
  // defaults) routes both without a cap. Each socket crosses by the stricter of the two.
  for (const auto& s : t.sockets) {
    INFO(s.name);
    CHECK(s.platform.interconnect_p2p_write.routed);
    CHECK(s.platform.interconnect_p2p_write.bandwidth_gbs == Approx(0.25));
    CHECK_FALSE(s.platform.interconnect_p2p_read.routed);
    CHECK(s.platform.interconnect_p2p_read.outstanding == 1);
  }
  // Its own root complex and memory stay each socket's own.
  CHECK(t.sockets[0].platform.max_gen == 3);
  CHECK(t.sockets[1].platform.max_gen == 4);
  // The interconnect (between cpu1 and cpu0, cpu1 first) takes the slower socket's timing:
  // tiny_gen3's 16 GB/s, not the first socket's 20.
  CHECK(t.interconnects[0].bandwidth_gbs == Approx(16));
  CHECK(t.interconnects[0].latency_ns == Approx(100));
  REQUIRE(t.warnings.size() == 1);
  CHECK_THAT(t.warnings[0],
             Contains("good/mixed_platforms.yaml:4:18: mixed_platforms: sockets of different "
                      "platforms (cpu0 'tiny_gen3', cpu1 'tiny_gen4'): P2P across the "
                      "interconnect takes the stricter policy of them all on every socket: "
                      "writes routed, at most 0.25 GB/s, reads not routed"));
  // Written out with every setting, it loads back to the same machine.
  config::document doc = config::document::parse(effective_yaml(t), "effective.yaml");
  topology back = load_topology(doc, {{k_dir + "platforms"}, {}});
  CHECK(back.mixed_platforms);
  CHECK(back.sockets[1].platform.interconnect_p2p_write.bandwidth_gbs == Approx(0.25));
  CHECK_FALSE(back.sockets[1].platform.interconnect_p2p_read.routed);
  CHECK(back.interconnects[0].bandwidth_gbs == Approx(16));
}

TEST_CASE("topology loader: socket iommu section", "[topology][loader][iommu]") {
  // Default off; --set reaches into the section even when the file has none.
  CHECK(load("good/switch_only.yaml").sockets[0].iommu.mode == iommu::iommu_mode::off);
  topology t = load("good/switch_only.yaml",
                    {"socket.cpu0.iommu.mode=translating", "socket.cpu0.iommu.miss_latency=1us"});
  const iommu::iommu_spec& c = t.sockets[0].iommu;
  CHECK(c.mode == iommu::iommu_mode::translating);
  CHECK(c.miss_latency_ns == 1000);
  CHECK(c.page_bytes == iommu::iommu_spec{}.page_bytes);
  CHECK(c.iotlb_entries == iommu::iommu_spec{}.iotlb_entries);
  CHECK(
      load("good/switch_only.yaml", {"socket.cpu0.iommu.mode=passthrough"}).sockets[0].iommu.mode ==
      iommu::iommu_mode::passthrough);
  CHECK(std::string(iommu::to_string(iommu::iommu_mode::passthrough)) == "passthrough");

  config::error e = error_of([] { load("bad/iommu_mode.yaml"); });
  CHECK(e.loc.str() == k_dir + "bad/iommu_mode.yaml:3:19");
  CHECK_THAT(e.what(), Contains("mode: expected one of: off, passthrough, translating, got "
                                "'strict'"));
  e = error_of([] { load("bad/iommu_page_size.yaml"); });
  CHECK(e.loc.str() == k_dir + "bad/iommu_page_size.yaml:5:18");
  CHECK_THAT(e.what(), Contains("page_size: expected a power of two from 4KiB to 1GiB, got 6KiB"));
  CHECK_THAT(error_of([] { load("good/switch_only.yaml", {"socket.cpu0.iommu.iotlb=8"}); }).what(),
             Contains("--set socket.cpu0.iommu.iotlb=8: error: unknown key 'iotlb' (expected one "
                      "of: mode, page_size, iotlb_entries, miss_latency)"));
  CHECK_THAT(
      error_of([] { load("good/switch_only.yaml", {"socket.cpu0.iommu.miss_latency=5"}); }).what(),
      Contains("--set socket.cpu0.iommu.miss_latency=5: error: miss_latency"));
}

TEST_CASE("topology loader: a GPU's rdma_writes_ordering", "[topology][loader]") {
  // CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING; OWNER unless the file says otherwise.
  CHECK(load("good/switch_only.yaml").find_device("gpu0")->spec<gpu::gpu_spec>()->rdma_ordering ==
        gpu::writes_ordering::owner);
  CHECK(load("good/switch_only.yaml", {"device.gpu0.rdma_writes_ordering=all_devices"})
            .find_device("gpu0")
            ->spec<gpu::gpu_spec>()
            ->rdma_ordering == gpu::writes_ordering::all_devices);
  CHECK_THAT(
      error_of([] {
        load("good/switch_only.yaml", {"device.gpu0.rdma_writes_ordering=gpu"});
      }).what(),
      Equals("--set device.gpu0.rdma_writes_ordering=gpu: error: rdma_writes_ordering: expected "
             "one of: none, owner, all_devices, got 'gpu'"));
  // A DMA engine has no VRAM for kernels to read.
  CHECK_THAT(error_of([] {
               load("good/switch_only.yaml", {"device.nic0.rdma_writes_ordering=none"});
             }).what(),
             Contains("unknown key 'rdma_writes_ordering'"));
}

TEST_CASE("topology loader: is_topology_override routes by first segment", "[topology][loader]") {
  for (const char* s : {"link.a.gen=1", "switch.a.b=1", "device.a.b=1", "socket.a.b=1",
                        "interconnect.a.b=1", "pcie.mps=1"})
    CHECK(is_topology_override(config::parse_override(s)));
  for (const char* s : {"runs=1", "links.a=1", "traffic.size=1", "devicex.a=1"})
    CHECK_FALSE(is_topology_override(config::parse_override(s)));
}

TEST_CASE("topology loader: platform presets", "[topology][loader]") {
  CHECK(available_platforms({k_dir + "platforms", "/nonexistent"}) ==
        std::vector<std::string>{"broken_preset", "tiny_gen3", "tiny_gen4"});
  platform_params p = load_platform(k_dir + "platforms/tiny_gen4.yaml");
  CHECK(p.name == "tiny_gen4");
  CHECK(p.spec.max_gen == 4);
  CHECK(p.spec.rc_latency_ns == root_complex::platform_spec{}.rc_latency_ns);
  config::error e = error_of([] { load("bad/bad_preset.yaml"); });
  CHECK_THAT(e.what(),
             Equals(k_dir + "platforms/broken_preset.yaml:4:3: error: unknown key "
                            "'latncy' (expected one of: latency, reorders_relaxed_writes, "
                            "ack_limit, fc_limit, p2p); did you mean "
                            "'latency'?"));
}

TEST_CASE("topology loader: the repository's topologies and presets load", "[topology][loader]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(P2PSIM_SOURCE_DIR) / "topologies";
  std::error_code ec;
  for (fs::directory_iterator it(dir / "platforms", ec), end; !ec && it != end; ++it)
    if (it->path().extension() == ".yaml") CHECK_NOTHROW(load_platform(it->path().string()));
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; ++it)
    if (it->path().extension() == ".yaml") {
      INFO(it->path().string());
      CHECK_NOTHROW(load_topology(it->path().string(), {{(dir / "platforms").string()}, {}}));
    }
}
