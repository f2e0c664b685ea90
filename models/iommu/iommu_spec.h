// What a topology file sets for a socket's IOMMU (docs/formats-topology.md, "sockets[].iommu";
// GPUDirect RDMA 13.3, 5.4 IOMMUs).
#pragma once

#include <cstdint>

#include "models/params/param.h"

namespace p2psim::iommu {

enum class iommu_mode { off, passthrough, translating };
const char* to_string(iommu_mode m);  // "off", "passthrough", "translating"

struct iommu_spec {
  iommu_mode mode = iommu_mode::off;
  uint64_t page_bytes = 4096;    // I/O page size: a power of two, at least 4 KiB
  uint32_t iotlb_entries = 64;   // 0: no IOTLB (every access walks the tables)
  double miss_latency_ns = 300;  // page walk on an IOTLB miss
};

inline const params::table<iommu_spec>& iommu_spec_params() {
  static const params::table<iommu_spec> t{
      params::choice("mode", &iommu_spec::mode,
                     {{"off", iommu_mode::off},
                      {"passthrough", iommu_mode::passthrough},
                      {"translating", iommu_mode::translating}},
                     "`off`: no IOMMU. `passthrough`: identity (1:1) for every device. "
                     "`translating`: devices' DMA addresses are I/O virtual addresses looked up "
                     "in I/O page tables."),
      // A PCIe request never crosses 4 KiB, so with pages of at least 4 KiB each TLP needs one
      // translation.
      params::size("page_size", &iommu_spec::page_bytes, "I/O page size.")
          .power_of_two(4096, double(1ull << 30)),
      params::integer("iotlb_entries", &iommu_spec::iotlb_entries,
                      "IOTLB entries (LRU) per device; 0 = none, every access walks.")
          .between(0, 1 << 20),
      params::time("miss_latency", &iommu_spec::miss_latency_ns,
                   "Page walk on an IOTLB miss, added to the request at the root complex."),
  };
  return t;
}

}  // namespace p2psim::iommu
