// The probe's dma-buf sequence, its VMM section: exports of memory mapped with cuMemCreate,
// cuMemAddressReserve, cuMemMap and cuMemSetAccess, unmapped, released and mapped again
// (probe_dmabuf.h).
#include "probe_dmabuf.h"

namespace cuda_probe {

using namespace named_memory;

void dmabuf_sequence::vmm() {
  line("== VMM memory (cuMemCreate, cuMemAddressReserve, cuMemMap, cuMemSetAccess)");
  const CUmemAllocationProp gdr1 = device_allocation(1), gdr0 = device_allocation(0);
  for (int opt = 0; opt < 2; ++opt) {
    size_t g = 0;
    const CUresult r =
        cuMemGetAllocationGranularity(&g, &gdr1, (CUmemAllocationGranularity_flags)opt);
    line(fmt("cuMemGetAllocationGranularity(gdr=1, %s) -> %s granularity=%s",
             opt ? "RECOMMENDED" : "MINIMUM", res(r).c_str(), size_name(g).c_str()));
  }
  auto create = [&](const char* n, size_t size, const CUmemAllocationProp& p) {
    CUmemGenericAllocationHandle h = 0;
    const CUresult r = cuMemCreate(&h, size, &p, 0);
    line(fmt("cuMemCreate(%s, size=%s, gdr=%d) -> %s", n, size_name(size).c_str(),
             p.allocFlags.gpuDirectRDMACapable, res(r).c_str()));
    return r == CUDA_SUCCESS ? h : 0;
  };
  auto reserve = [&](const char* n, size_t size) {
    CUdeviceptr p = 0;
    const CUresult r = cuMemAddressReserve(&p, size, 0, 0, 0);
    std::string s =
        fmt("cuMemAddressReserve(%s, size=%s) -> %s", n, size_name(size).c_str(), res(r).c_str());
    if (r == CUDA_SUCCESS) {
      s += " align=" + align(p);
      add(n, p, size);
    }
    line(s);
    return r == CUDA_SUCCESS ? p : 0;
  };
  auto map = [&](CUdeviceptr p, size_t size, CUmemGenericAllocationHandle h, const char* hn) {
    line(fmt("cuMemMap(%s, size=%s, %s) -> %s", name(p).c_str(), size_name(size).c_str(), hn,
             res(cuMemMap(p, size, 0, h, 0)).c_str()));
  };
  auto access = [&](CUdeviceptr p, size_t size) {
    CUmemAccessDesc d;
    std::memset(&d, 0, sizeof d);
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = 0;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    line(fmt("cuMemSetAccess(%s, size=%s, dev 0 RW) -> %s", name(p).c_str(),
             size_name(size).c_str(), res(cuMemSetAccess(p, size, &d, 1)).c_str()));
  };
  auto unmap = [&](CUdeviceptr p, size_t size, const std::string& why = "") {
    line(fmt("cuMemUnmap(%s, size=%s)%s -> %s", name(p).c_str(), size_name(size).c_str(),
             why.c_str(), res(cuMemUnmap(p, size)).c_str()));
  };
  auto release = [&](CUmemGenericAllocationHandle h, const char* n, const std::string& why = "") {
    line(fmt("cuMemRelease(%s)%s -> %s", n, why.c_str(), res(cuMemRelease(h)).c_str()));
  };

  // V1: 64 MiB, RDMA capable, mapped at the start of a 128 MiB reservation R1.
  const CUmemGenericAllocationHandle v1 = create("V1", 64 * MiB, gdr1);
  const CUdeviceptr r1 = reserve("R1", 128 * MiB);
  if (!v1 || !r1) return;
  get(r1, 64 * MiB, " (reserved, nothing mapped)");
  map(r1, 64 * MiB, v1, "V1");
  get(r1, 64 * MiB, " (mapped, no access set)");
  access(r1, 64 * MiB);
  for (int a : {a_memory_type, a_range_start, a_range_size, a_mapped, a_allowed_handle_types, a_gdr,
                a_legacy_ipc, a_buffer_id})
    attr(a, r1);
  get(r1, 64 * MiB);
  get(r1 + 64 * KiB, 64 * KiB);
  get(r1 + 4 * KiB, 4 * KiB);
  get(r1 + 100, page);
  get(r1, 128 * MiB, " (half unmapped)");
  get(r1 + 64 * MiB, 2 * MiB, " (unmapped part)");
  get(r1, 64 * MiB, " (MAPPING_TYPE_PCIE)", dma_buf_fd, mapping_type_pcie);
  attr(a_allowed_handle_types, r1, " after export");

  // Three 2 MiB handles side by side in R2: V3 and V4 RDMA capable, V2 not.
  const CUmemGenericAllocationHandle v3 = create("V3", 2 * MiB, gdr1);
  const CUmemGenericAllocationHandle v4 = create("V4", 2 * MiB, gdr1);
  const CUmemGenericAllocationHandle v2 = create("V2", 2 * MiB, gdr0);
  const CUdeviceptr r2 = reserve("R2", 6 * MiB);
  if (v3 && v4 && v2 && r2) {
    map(r2, 2 * MiB, v3, "V3");
    map(r2 + 2 * MiB, 2 * MiB, v4, "V4");
    map(r2 + 4 * MiB, 2 * MiB, v2, "V2");
    access(r2, 6 * MiB);
    attr(a_gdr, r2 + 4 * MiB, " (V2)");
    attr(a_range_size, r2 + 4 * MiB, " (V2)");
    get(r2, 4 * MiB, " (V3 and V4)");
    get(r2 + 2 * MiB - page, 2 * page, " (V3 and V4)");
    get(r2 + 4 * MiB, 2 * MiB, " (V2, gdr=0)");
    get(r2 + 2 * MiB, 4 * MiB, " (V4 gdr=1 and V2 gdr=0)");
    get(r2, 6 * MiB, " (all three)");
    unmap(r2, 6 * MiB);
  }
  if (v3) release(v3, "V3");
  if (v4) release(v4, "V4");
  if (v2) release(v2, "V2");
  if (r2) line("cuMemAddressFree(R2) -> " + res(cuMemAddressFree(r2, 6 * MiB)));

  // Unmapped and released while exported.
  line("-- V1 unmapped and released while its export is open");
  const int fd = get(r1, 64 * MiB, "", dma_buf_fd, 0, true);
  size_t before = free_memory();
  unmap(r1, 64 * MiB, " (exported)");
  memory_moved(before, "after cuMemUnmap(R1)", 64 * MiB);
  get(r1, 64 * MiB, " (unmapped)");
  get(r1 + 64 * KiB, 64 * KiB, " (unmapped)");
  attr(a_mapped, r1, " (unmapped)");
  if (fd >= 0) describe(fd, 64 * MiB, "fd of R1");
  before = free_memory();
  release(v1, "V1", " (exported, unmapped)");
  memory_moved(before, "after cuMemRelease(V1)", 64 * MiB);
  if (fd >= 0) describe(fd, 64 * MiB, "fd of R1");
  before = free_memory();
  if (fd >= 0) line(fmt("close(fd of R1) -> %d", fd_close(fd)));
  memory_moved(before, "after close(fd of R1)", 64 * MiB);
  // Mapped again with a new handle: a new export is needed (the guide says so).
  const CUmemGenericAllocationHandle v5 = create("V5", 64 * MiB, gdr1);
  if (v5) {
    map(r1, 64 * MiB, v5, "V5");
    access(r1, 64 * MiB);
    get(r1, 64 * MiB, " (V5 mapped where V1 was)");
    unmap(r1, 64 * MiB);
    release(v5, "V5");
  }
  line("cuMemAddressFree(R1) -> " + res(cuMemAddressFree(r1, 128 * MiB)));
}

}  // namespace cuda_probe
