// The hardware description: what a topology YAML file says, typed and with units resolved.
// Plain data, no SystemC. Loaded by topology_loader, checked and enumerated by topology_graph,
// turned into SystemC modules by core::fabric_system (sim/core/system.h, system.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/source_loc.h"

namespace p2psim::topo {

// Where each key of an element was written (the location of its value), for checks that run
// after loading. Empty for elements built in code; loc_of() then falls back to the element.
using key_locations = std::map<std::string, config::source_loc>;

// Receiver buffer sizes in flow-control credits (PCIe Base Spec 2.6.1: a header credit holds
// one TLP header, a data credit 16 bytes). 0 means "infinite" (advertised as 0 on the wire).
struct credit_params {
  uint32_t ph = 64, pd = 1024;      // posted requests
  uint32_t nph = 64, npd = 64;      // non-posted requests
  uint32_t cplh = 64, cpld = 1024;  // completions
};

struct link_params {
  std::string up;           // upstream node: a socket or a switch
  std::string down;         // downstream node: a switch or an endpoint; also the link's name
  int host_bridge = 0;      // with a socket as `up`: which of its host bridges the root port is on
  int gen = 3;              // 1..5
  int width = 16;           // 1, 2, 4, 8, 12, 16, 32
  double latency_ns = 5.0;  // propagation, one way (wire + PHY pipeline)
  bool ecrc = false;
  // DLLP rates in bytes between ACK / UpdateFC DLLPs; 0 = the spec's recommended table value
  // for this gen, width and MPS (PCIe Base Spec 5.0 tables 3-7..3-9 and 2-46..2-48).
  uint32_t ack_limit = 0, fc_limit = 0;
  credit_params credits;
  config::source_loc loc;
  key_locations key_locs;
};

// Root complex, memory and socket-interconnect behaviour of one CPU family.
// Loaded from topologies/platforms/<name>.yaml, overridable per socket.
struct p2p_forwarding {
  bool routed = true;        // false: the request is answered with Unsupported Request
  double bandwidth_gbs = 0;  // forwarding throughput cap, GB/s (1e9); 0 = no cap
  uint32_t outstanding = 0;  // reads: requests forwarded at once; 0 = no limit
};

struct platform_params {
  std::string name;
  std::string description;
  int max_gen = 5;
  // Root complex.
  double rc_latency_ns = 100;  // root port ingress to memory controller or to another port
  // Peer-to-peer between root ports of one socket (or host bridges of one socket).
  p2p_forwarding p2p_write, p2p_read;
  uint32_t p2p_tlp_bytes = 0;  // size the root complex re-emits P2P writes and read
                               // requests in (e.g. 64); 0 = unchanged
  double p2p_latency_ns = 0;   // extra latency on P2P forwarding
  // Host memory behind the root complex.
  double mem_latency_ns = 90;
  double mem_bandwidth_gbs = 50;
  uint32_t mem_cpl_bytes = 64;  // completion size for reads of host memory (RCB split)
  // Socket interconnect (QPI/UPI/xGMI), per direction.
  double qpi_bandwidth_gbs = 20;
  double qpi_latency_ns = 100;
  p2p_forwarding qpi_p2p_write, qpi_p2p_read;  // P2P traffic crossing the interconnect
  config::source_loc loc;
  key_locations key_locs;
};

// The socket's IOMMU, for every device below it (GPUDirect RDMA 13.3, 5.4 IOMMUs;
// docs/design.md, "Topology classes"). Mirrors iommu::iommu_params, so that sim/topology needs
// no model headers.
enum class iommu_mode { off, passthrough, translating };

struct iommu_config {
  iommu_mode mode = iommu_mode::off;
  uint64_t page_bytes = 4096;    // I/O page size: a power of two, 4 KiB..1 GiB
  uint32_t iotlb_entries = 64;   // 0: no IOTLB
  double miss_latency_ns = 300;  // page walk on an IOTLB miss
};

struct socket_params {
  std::string name;
  std::string platform_name;
  platform_params platform;  // the preset with this socket's overrides applied
  iommu_config iommu;
  uint64_t memory_bytes = 16ull << 30;
  int host_bridges = 1;
  config::source_loc loc;
  key_locations key_locs;
};

struct interconnect_params {
  std::string name;
  std::string a, b;                                 // the two sockets
  std::optional<double> bandwidth_gbs, latency_ns;  // unset: the sockets' platform values
  config::source_loc loc;
  key_locations key_locs;
};

struct switch_params {
  std::string name;
  double latency_ns = 110;    // ingress to egress, header in to header out
  bool cut_through = true;    // false: store-and-forward (waits for the TLP's tail)
  bool acs_redirect = false;  // ACS P2P Request Redirect: peer requests go up to the RC
  int ports = 0;              // downstream ports; 0 = as many as links below it
  config::source_loc loc;
  key_locations key_locs;
};

enum class device_type { gpu, dma_engine };
// Which kernels see GPUDirect RDMA writes in order without a flush or a CPU-side CUDA call
// (CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING). Mirrors gpu::writes_ordering, so
// that sim/topology needs no model headers.
enum class rdma_writes_ordering { none, owner, all_devices };

struct device_params {
  std::string name;
  device_type type = device_type::gpu;
  // PCIe device control; 0 = the topology-wide `pcie` value.
  uint32_t mps = 0, mrrs = 0, rcb = 0;
  uint32_t tags = 0;                  // outstanding non-posted requests (32 / 256 / 768)
  uint64_t bar0_bytes = 16ull << 20;  // registers
  std::optional<uint64_t> bar0_address;
  // GPU.
  uint64_t bar1_bytes = 256ull << 20;
  uint64_t bar1_reserved_bytes = 32ull << 20;  // driver-internal (guide 5.5: 32 MB on Kepler)
  std::optional<uint64_t> bar1_address;
  uint64_t vram_bytes = 16ull << 30;
  double vram_latency_ns = 300;  // BAR1 read: request in to first completion out
  double vram_bandwidth_gbs = 900;
  rdma_writes_ordering rdma_ordering = rdma_writes_ordering::owner;
  // DMA engine: on-board memory exposed in BAR2 (0 = none), descriptor processing.
  uint64_t bar2_bytes = 0;
  std::optional<uint64_t> bar2_address;
  uint64_t local_memory_bytes = 1ull << 30;  // buffer the engine reads into / writes from
  double descriptor_latency_ns = 50;
  config::source_loc loc;
  key_locations key_locs;
};

struct pcie_defaults {
  uint32_t mps = 256, mrrs = 512, rcb = 64;
  uint32_t tags = 256;
  config::source_loc loc;
  key_locations key_locs;
};

struct topology {
  std::string name;
  std::string description;
  std::string file;        // path it was loaded from
  config::source_loc loc;  // the file's top level
  key_locations key_locs;  // of the top-level keys
  pcie_defaults pcie;
  std::vector<socket_params> sockets;
  std::vector<interconnect_params> interconnects;
  std::vector<switch_params> switches;
  std::vector<device_params> devices;
  std::vector<link_params> links;

  const device_params* find_device(const std::string& name) const;
  const socket_params* find_socket(const std::string& name) const;
  const switch_params* find_switch(const std::string& name) const;
  const link_params* link_above(const std::string& node) const;  // nullptr for sockets
  const interconnect_params* find_interconnect(const std::string& name) const;
  // Links whose `up` is `node`, in file order (for a socket: all host bridges).
  std::vector<const link_params*> links_below(const std::string& node) const;
  int socket_index(const std::string& name) const;  // -1 if there is no such socket
  // The device's effective PCIe settings (device value or topology default).
  uint32_t mps_of(const device_params& d) const { return d.mps ? d.mps : pcie.mps; }
  uint32_t mrrs_of(const device_params& d) const { return d.mrrs ? d.mrrs : pcie.mrrs; }
  uint32_t rcb_of(const device_params& d) const { return d.rcb ? d.rcb : pcie.rcb; }
  uint32_t tags_of(const device_params& d) const { return d.tags ? d.tags : pcie.tags; }
};

// Where `key` of an element was written, else where the element starts.
template <class T>
config::source_loc loc_of(const T& element, const std::string& key) {
  auto it = element.key_locs.find(key);
  return it != element.key_locs.end() ? it->second : element.loc;
}

const char* to_string(device_type t);           // "gpu", "dma_engine"
const char* to_string(iommu_mode m);            // "off", "passthrough", "translating"
const char* to_string(rdma_writes_ordering o);  // "none", "owner", "all_devices"

}  // namespace p2psim::topo
