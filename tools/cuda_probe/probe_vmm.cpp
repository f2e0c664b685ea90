// The probe's virtual-memory-management sequence (`probe --vmm`): the reserve-a-range-then-map
// scheme NCCL and UCX use. cuMemAddressReserve / cuMemAddressFree, cuMemCreate / cuMemRelease,
// cuMemMap / cuMemUnmap, cuMemSetAccess / cuMemGetAccess, cuMemGetAllocationGranularity,
// cuMemExportToShareableHandle / cuMemImportFromShareableHandle, cuMemRetainAllocationHandle and
// cuMemGetAllocationPropertiesFromHandle: before cuInit, without a context, in a context and
// after it is destroyed, with every misuse a program makes (sizes, alignments, offsets, flags,
// devices, ranges mapped twice or not at all, handles released while mapped or twice), the
// pointer attributes of mapped, unmapped and released memory (what RANGE_START / RANGE_SIZE and
// BUFFER_ID are on VMM memory), and copies through mapped ranges, their bytes checked.
//
// Nothing that varies run to run is printed: reservations are named after this run's own
// (R0, M, ...) and addresses as "M+2MiB"; handles after this run's cuMemCreate calls (H0, ...),
// handles a call returns as "same as H3" / "new"; buffer and block IDs as "new" / "same as
// <the address that first had it>"; alignment only up to 2 MiB; where a reservation lies
// relative to the one before only as adjacent / above / below. Lines starting with '#' are
// comments the comparison with the model leaves out (the exact placement of each reservation,
// its alignment past 2 MiB, file descriptor numbers). The calls whose outcome the reference
// leaves undefined (copies into memory without access, which may fault the context, and
// releasing a handle twice) come last, in a context of their own. Transcript from an H200:
// tests/data/cuda_probe/h200_cuda13_vmm.txt.
#include "probe_vmm.h"

namespace cuda_probe::vmm {

int vmm_sequence::reserve(const std::string& n, size_t size, size_t alignment, CUdeviceptr addr,
                          unsigned long long flags, const std::string& why, const std::string& at) {
  CUdeviceptr p = 0;
  const CUresult r = cuMemAddressReserve(&p, size, alignment, addr, flags);
  std::string s = fmt("cuMemAddressReserve(size=%s, align=%s, addr=%s, flags=%llu)%s -> %s",
                      sz(size).c_str(), sz(alignment).c_str(),
                      !addr        ? "0"
                      : at.empty() ? va(addr).c_str()
                                   : at.c_str(),
                      flags, why.c_str(), res(r).c_str());
  if (r != CUDA_SUCCESS || p == 0) {
    if (r == CUDA_SUCCESS) s += " ptr=null";
    line(s);
    return -1;
  }
  s += " " + n + " align=" + align(p);
  if (alignment) s += (p % alignment == 0) ? " meets_align=yes" : " meets_align=no";
  if (addr) s += p == addr ? " at_request=yes" : " at_request=no";
  // Where it lies relative to the previous reservation: adjacent after its end or before its
  // start, else above or below it.
  std::string exact;
  if (m_last_res >= 0) {
    const region& q = m_regions[m_last_res];
    if (p == q.base + q.size)
      s += " placed=after_prev_end";
    else if (p + size == q.base)
      s += " placed=before_prev_start";
    else
      s += p > q.base ? " placed=above_prev" : " placed=below_prev";
    exact = fmt(" start-prev_start=%s", ssz((long long)(p - q.base)).c_str());
  }
  for (const region& q : m_regions)
    if (!q.live && q.base == p) s += " reuses_va_of=" + q.name;
  for (const region& q : m_regions)
    if (q.live && p < q.base + q.size && q.base < p + size) s += " overlaps=" + q.name;
  // The nearest region below and above it, by address (the driver's VA layout).
  std::string near;
  for (const region& q : m_regions) {
    if (q.base + q.size <= p && p - (q.base + q.size) < 64 * GiB)
      near += fmt(" %s_end%s", q.name.c_str(), ssz((long long)(p - (q.base + q.size))).c_str());
    else if (q.base >= p + size && q.base - (p + size) < 64 * GiB)
      near += fmt(" %s_start-%s", q.name.c_str(), sz(q.base - (p + size)).c_str());
  }
  const int k = int(m_regions.size());
  m_regions.push_back({n, p, size, true, true});
  m_last_res = k;
  line(s);
  line("# " + n + ": align=" + align(p, uint64_t(1) << 46) + exact +
       " regions within 64GiB:" + (near.empty() ? std::string(" none") : near));
  return k;
}

void vmm_sequence::attr(int a, CUdeviceptr p, const std::string& why) {
  union {
    unsigned char raw[64];
    CUcontext ctx;
    unsigned int u;
    int i;
    CUdeviceptr dp;
    void* host;
    unsigned long long ull;
    size_t sz;
    CUDA_POINTER_ATTRIBUTE_P2P_TOKENS tok;
  } v;
  std::memset(v.raw, 0xAB, sizeof v.raw);
  const CUresult r = cuPointerGetAttribute(v.raw, (CUpointer_attribute)a, p);
  std::string s = fmt("cuPointerGetAttribute(%s=%d, %s)%s -> %s", attr_name(a), a, va(p).c_str(),
                      why.c_str(), res(r).c_str());
  if (r == CUDA_SUCCESS) {
    switch (a) {
      case a_context:
        s += " ctx=" + ctx_name(v.ctx);
        break;
      case a_device_pointer:
      case a_range_start:
      case a_mapping_base:
        s += " ptr=" + (v.dp == p ? std::string("=arg") : va(v.dp));
        break;
      case a_host_pointer:
        s += std::string(" ptr=") + (v.host == nullptr               ? "null"
                                     : v.host == (void*)(uintptr_t)p ? "=arg"
                                                                     : "other");
        break;
      case a_p2p_tokens:
        s += fmt(" p2pToken=%s vaSpaceToken=%s", v.tok.p2pToken ? "nonzero" : "zero",
                 v.tok.vaSpaceToken ? "nonzero" : "zero");
        break;
      case a_range_size:
      case a_mapping_size:
        s += " size=" + sz(v.sz);
        break;
      case a_buffer_id:
        s += " id=" + id_name(m_buffer_ids, v.ull, va(p));
        break;
      case a_block_id:
        s += " id=" + id_name(m_block_ids, v.ull, va(p));
        break;
      case a_handle_types:
        s += fmt(" value=0x%llx", v.ull);
        break;
      case a_mempool:
        s += std::string(" pool=") + (v.host ? "nonnull" : "null");
        break;
      default:
        s += fmt(" value=%d", v.i);
    }
  }
  line(s);
}

void vmm_sequence::before_init() {
  line("== VMM before cuInit");
  CUmemAllocationProp p = dev_prop();
  granularity(&p, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  CUdeviceptr d = 0;
  CUresult r = cuMemAddressReserve(&d, 2 * MiB, 0, 0, 0);
  line("cuMemAddressReserve(size=2MiB, align=0, addr=0, flags=0) -> " + res(r));
  if (r == CUDA_SUCCESS) cuMemAddressFree(d, 2 * MiB);
  CUmemGenericAllocationHandle h = 0;
  r = cuMemCreate(&h, 2 * MiB, &p, 0);
  line("cuMemCreate(size=2MiB, prop=" + prop_desc(p) + ", flags=0) -> " + res(r));
  if (r == CUDA_SUCCESS) cuMemRelease(h);
  line("cuMemRelease(0) -> " + res(cuMemRelease(0)));
  line("cuMemAddressFree(null, size=2MiB) -> " + res(cuMemAddressFree(0, 2 * MiB)));
  line("cuMemMap(null, size=2MiB, offset=0, 0, flags=0) -> " + res(cuMemMap(0, 2 * MiB, 0, 0, 0)));
  line("cuMemUnmap(null, size=2MiB) -> " + res(cuMemUnmap(0, 2 * MiB)));
  CUmemAccessDesc a;
  std::memset(&a, 0, sizeof a);
  a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  line("cuMemSetAccess(null, size=2MiB, {loc=1:0 flags=0x3} x1) -> " +
       res(cuMemSetAccess(0, 2 * MiB, &a, 1)));
  line("cuInit(0) -> " + res(cuInit(0)));
}

void vmm_sequence::no_context() {
  line("== VMM after cuInit, no context");
  current();
  CUmemAllocationProp p = dev_prop();
  granularity(&p, CU_MEM_ALLOC_GRANULARITY_MINIMUM, " without context");
  granularity(&p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED, " without context");
  const int n0 = reserve("N0", 4 * MiB, 0, 0, 0, " without context");
  const CUmemGenericAllocationHandle h = create(hn(), 2 * MiB, p, 0, " without context");
  bool mapped = false, usable = false;
  if (h) props(h, " without context");
  if (n0 >= 0 && h) {
    mapped = map(base(n0), 2 * MiB, 0, h, 0, " without context") == CUDA_SUCCESS;
    if (mapped) {
      usable = rw(base(n0), 2 * MiB, " without context") == CUDA_SUCCESS;
      get_access(base(n0), CU_MEM_LOCATION_TYPE_DEVICE, 0, " without context");
      attr(a_memory_type, base(n0), " without context");
      attr(a_context, base(n0), " without context");
      attr(a_mapped, base(n0), " without context");
      attr(a_range_size, base(n0), " without context");
      range(base(n0), " without context");
      if (usable) {
        std::vector<unsigned char> b(4096);
        line("cuMemcpyHtoD(N0, host, 4KiB) without context -> " +
             res(cuMemcpyHtoD(base(n0), b.data(), 4096)));
      }
    }
  }
  current(" after the VMM calls");
  primary_state();
  m_c = new_context("C");
  if (mapped) {
    attr(a_context, base(n0), " in C");
    attr(a_access_flags, base(n0), " in C");
    const bool acc = usable || rw(base(n0), 2 * MiB, " in C") == CUDA_SUCCESS;
    if (acc && get_access(base(n0), CU_MEM_LOCATION_TYPE_DEVICE, 0, " in C") == 3) {
      put(base(n0), 2 * MiB, 1, " in C, mapped without context");
      check(base(n0), 2 * MiB, 1, 0, " in C, mapped without context");
    }
    unmap(base(n0), 2 * MiB);
  }
  if (h) release(h);
  if (n0 >= 0) addr_free(base(n0), 4 * MiB);
}

void vmm_sequence::device_attributes() {
  line("== device attributes");
  static const struct {
    const char* name;
    int value;
  } attrs[] = {
      {"UNIFIED_ADDRESSING", 41},
      {"VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED", 102},
      {"HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED", 103},
      {"HANDLE_TYPE_WIN32_HANDLE_SUPPORTED", 104},
      {"HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED", 105},
      {"GENERIC_COMPRESSION_SUPPORTED", 107},
      {"GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED", 110},
      {"SPARSE_CUDA_ARRAY_SUPPORTED", 112},
      {"MEMORY_POOLS_SUPPORTED", 115},
      {"GPU_DIRECT_RDMA_SUPPORTED", 116},
      {"GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS", 117},
      {"GPU_DIRECT_RDMA_WRITES_ORDERING", 118},
      {"MEMPOOL_SUPPORTED_HANDLE_TYPES", 119},
      {"DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED", 121},
      {"DMA_BUF_SUPPORTED", 124},
      {"HANDLE_TYPE_FABRIC_SUPPORTED", 128},
      {"MULTICAST_SUPPORTED", 132},
      {"HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED", 141},
      {"HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED", 145},
  };
  for (const auto& a : attrs) {
    int v = -12345;
    const CUresult r = cuDeviceGetAttribute(&v, (CUdevice_attribute)a.value, 0);
    std::string s =
        fmt("cuDeviceGetAttribute(%s=%d, dev=0) -> %s", a.name, a.value, res(r).c_str());
    if (r == CUDA_SUCCESS) s += fmt(" value=%d", v);
    line(s);
  }
}

void vmm_sequence::granularities() {
  line("== cuMemGetAllocationGranularity");
  for (int option : {0, 1})
    for (unsigned types : {0u, 1u})
      for (unsigned char gdr : {0, 1}) {
        CUmemAllocationProp p = dev_prop(0, types, gdr);
        granularity(&p, option);
      }
  {
    CUmemAllocationProp p = dev_prop();
    size_t g = 0;
    if (cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_SUCCESS)
      m_gran = g;
    granularity(&p, 5, " bad option");
    granularity(&p, 2, " bad option");
    granularity(&p, 0, " again");
  }
  for (int id : {1, -1, 99}) {
    CUmemAllocationProp p = dev_prop(id);
    granularity(&p, 0, " bad device");
  }
  for (int t : {0, 2, 3, 4, 5}) {
    CUmemAllocationProp p = dev_prop();
    p.location.type = (CUmemLocationType)t;
    granularity(&p, 0, " location type");
    granularity(&p, 1, " location type");
  }
  for (int t : {0, 2, 3}) {
    CUmemAllocationProp p = dev_prop();
    p.type = (CUmemAllocationType)t;
    granularity(&p, 0, " allocation type");
  }
  for (unsigned types : {2u, 4u, 8u, 9u, 0x10u}) {
    CUmemAllocationProp p = dev_prop(0, types);
    granularity(&p, 0, " handle types");
  }
  {
    CUmemAllocationProp p = dev_prop();
    p.allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_GENERIC;
    granularity(&p, 0, " compressible");
    granularity(&p, 1, " compressible");
    p = dev_prop();
    p.allocFlags.gpuDirectRDMACapable = 2;
    granularity(&p, 0, " gdr=2");
  }
  {
    CUmemAllocationProp p = dev_prop();
    line("cuMemGetAllocationGranularity(NULL, prop, option=0) -> " +
         res(cuMemGetAllocationGranularity(nullptr, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM)));
    granularity(nullptr, 0);
  }
}

void vmm_sequence::reservations() {
  line("== cuMemAddressReserve and cuMemAddressFree");
  const int r0 = reserve("R0", 2 * MiB, 0);
  const int r1 = reserve("R1", 64 * MiB, 0);
  const int r2 = reserve("R2", 2 * MiB, 0);
  int k = reserve("Rs1M", MiB, 0, 0, 0, " not a granularity multiple");
  if (k >= 0) {
    attr(a_range_size, base(k), " reserved only");
    addr_free(base(k), MiB);
  }
  k = reserve("Rs4K", 4 * KiB, 0, 0, 0, " a host page");
  if (k >= 0) addr_free(base(k), 4 * KiB);
  k = reserve("Rs4097", 4097, 0, 0, 0, " not a page multiple");
  if (k >= 0) addr_free(base(k), 4097);
  k = reserve("Rs0", 0, 0, 0, 0, " size 0");
  if (k >= 0) addr_free(base(k), 0);
  // Alignments.
  for (auto [n, a] :
       {std::pair{"Ra2M", 2 * MiB}, std::pair{"Ra4M", 4 * MiB}, std::pair{"Ra1M", MiB},
        std::pair{"Ra64K", 64 * KiB}, std::pair{"Ra3M", 3 * MiB}, std::pair{"Ra1G", GiB},
        std::pair{"Ra4K+1", 4 * KiB + 1}}) {
    k = reserve(n, 2 * MiB, a);
    if (k >= 0) addr_free(base(k), 2 * MiB);
  }
  k = reserve("Ra4M_6M", 6 * MiB, 4 * MiB, 0, 0, " size not a multiple of the alignment");
  if (k >= 0) addr_free(base(k), 6 * MiB);
  // Requested addresses: taken, just after an existing reservation, freed.
  k = reserve("Rt", 2 * MiB, 0, base(r0), 0, " taken", "R0");
  if (k >= 0) addr_free(base(k), 2 * MiB);
  k = reserve("Rt1", 2 * MiB, 0, base(r1) + 2 * MiB, 0, " inside a reservation", "R1+2MiB");
  if (k >= 0) addr_free(base(k), 2 * MiB);
  k = reserve("Rt2", 4 * MiB, 0, base(r2) - 2 * MiB, 0, " overlapping a reservation's start",
              "R2-2MiB");
  if (k >= 0) addr_free(base(k), 4 * MiB);
  const int rn =
      reserve("Rn", 2 * MiB, 0, base(r2) + 2 * MiB, 0, " just after R2's end", "R2+2MiB");
  const int rn2 =
      reserve("Rn2", 2 * MiB, 0, base(r1) + 64 * MiB, 0, " just after R1's end", "R1+64MiB");
  k = reserve("Ru", 2 * MiB, 0, base(r2) + 6 * MiB + 4 * KiB, 0, " hint not 2MiB aligned",
              "R2+6MiB+4KiB");
  if (k >= 0) addr_free(base(k), 2 * MiB);
  k = reserve("Ru2", 2 * MiB, 0, base(r2) + 6 * MiB + 100, 0, " hint not page aligned",
              "R2+6MiB+100");
  if (k >= 0) addr_free(base(k), 2 * MiB);
  k = reserve("Rh", 2 * MiB, 4 * MiB, base(r2) + 10 * MiB, 0, " hint not meeting the alignment",
              (base(r2) + 10 * MiB) % (4 * MiB) ? "R2+10MiB (not 4MiB aligned)"
                                                : "R2+10MiB (4MiB aligned)");
  if (k >= 0) addr_free(base(k), 2 * MiB);
  const int x = reserve("X", 4 * MiB, 0);
  const CUdeviceptr xb = base(x);
  if (x >= 0) {
    addr_free(xb, 4 * MiB);
    k = reserve("Xagain", 4 * MiB, 0, xb, 0, " at freed X", "X");
    if (k >= 0) addr_free(base(k), 4 * MiB);
    k = reserve("Xbigger", 8 * MiB, 0, xb, 0, " at freed X, larger", "X");
    if (k >= 0) addr_free(base(k), 8 * MiB);
    k = reserve("Xnohint", 4 * MiB, 0, 0, 0, " after X was freed, no hint");
    if (k >= 0) addr_free(base(k), 4 * MiB);
  }
  for (unsigned long long f : {1ull, 2ull, 0x80000000ull}) {
    k = reserve(fmt("Rf%llx", f), 2 * MiB, 0, 0, f);
    if (k >= 0) addr_free(base(k), 2 * MiB);
  }
  k = reserve("Rbig", 256 * GiB, 0, 0, 0, " 256GiB");
  if (k >= 0) addr_free(base(k), 256 * GiB);
  line("cuMemAddressReserve(NULL, size=2MiB) -> " +
       res(cuMemAddressReserve(nullptr, 2 * MiB, 0, 0, 0)));
  // Frees: interior, wrong sizes, the start, twice.
  addr_free(base(r1) + 2 * MiB, 62 * MiB, " interior");
  addr_free(base(r1) + 2 * MiB, 2 * MiB, " interior");
  addr_free(base(r1), 32 * MiB, " smaller size");
  addr_free(base(r1), 128 * MiB, " larger size");
  addr_free(base(r1), 0, " size 0");
  if (rn2 >= 0) addr_free(base(r1), 66 * MiB, " R1 and Rn2 together");
  addr_free(base(r1), 64 * MiB);
  addr_free(base(r1), 64 * MiB, " twice");
  if (rn2 >= 0) addr_free(base(rn2), 2 * MiB);
  addr_free(0, 2 * MiB, " null");
  addr_free(0, 0, " null, size 0");
  addr_free(base(r0) + 4 * KiB, 2 * MiB - 4 * KiB, " interior, to the end");
  addr_free(base(r0), 2 * MiB);
  addr_free(base(r2), 4 * MiB, " R2 and Rn together");
  addr_free(base(r2), 2 * MiB);
  if (rn >= 0) addr_free(base(rn), 2 * MiB);
  const int after = reserve("Rafter", 2 * MiB, 0, 0, 0, " after the frees");
  if (after >= 0) addr_free(base(after), 2 * MiB);
}

}  // namespace cuda_probe::vmm
