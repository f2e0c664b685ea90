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
#include <fcntl.h>
#include <unistd.h>

#include "probe.h"
#include "probe_named_memory.h"

namespace cuda_probe {

namespace {

constexpr uint64_t GiB = 1024 * MiB;

// CUpointer_attribute, by number (cuda.h).
enum : int {
  a_context = 1,
  a_memory_type = 2,
  a_device_pointer = 3,
  a_host_pointer = 4,
  a_p2p_tokens = 5,
  a_sync_memops = 6,
  a_buffer_id = 7,
  a_is_managed = 8,
  a_device_ordinal = 9,
  a_legacy_ipc = 10,
  a_range_start = 11,
  a_range_size = 12,
  a_mapped = 13,
  a_handle_types = 14,
  a_gdr = 15,
  a_access_flags = 16,
  a_mempool = 17,
  a_mapping_size = 18,
  a_mapping_base = 19,
  a_block_id = 20,
  a_hw_decompress = 21,
};

// Every attribute a program asks of VMM memory.
const int all_attrs[] = {
    a_context,      a_memory_type, a_device_pointer, a_host_pointer,   a_p2p_tokens,
    a_sync_memops,  a_buffer_id,   a_is_managed,     a_device_ordinal, a_legacy_ipc,
    a_range_start,  a_range_size,  a_mapped,         a_handle_types,   a_gdr,
    a_access_flags, a_mempool,     a_mapping_size,   a_mapping_base,   a_block_id,
    a_hw_decompress};
// The ones that tell what a range is and whether it is usable.
const int short_attrs[] = {a_context, a_memory_type,  a_buffer_id,    a_range_start,  a_range_size,
                           a_mapped,  a_access_flags, a_mapping_size, a_mapping_base, a_block_id};

// A size or offset: "2MiB", "4KiB", or bytes.
std::string sz(uint64_t v) {
  if (v == 0) return "0";
  if (v % GiB == 0) return fmt("%lluGiB", (unsigned long long)(v / GiB));
  if (v % MiB == 0) return fmt("%lluMiB", (unsigned long long)(v / MiB));
  if (v % KiB == 0) return fmt("%lluKiB", (unsigned long long)(v / KiB));
  return fmt("%llu", (unsigned long long)v);
}
std::string ssz(long long v) {
  return v < 0 ? "-" + sz(uint64_t(-v)) : "+" + sz(uint64_t(v));
}

// A VA range this run reserved (cuMemAddressReserve) or allocated (cuMemAlloc).
struct region {
  std::string name;
  CUdeviceptr base;
  size_t size;
  bool live;
  bool vmm;
};

// A handle this run made (cuMemCreate) or was given (import, retain).
struct handle_rec {
  std::string name;
  CUmemGenericAllocationHandle h;
  size_t size;
  bool live;
};

class vmm_sequence {
 public:
  explicit vmm_sequence(const sink& out) : m_out(out) {}
  void run();

 private:
  void line(const std::string& s) { m_out(s); }
  static std::string res(CUresult r) { return result_name(r); }

  // --- naming -------------------------------------------------------------------------------
  // "R0" or "R0+2MiB" (latest region whose [base, base + size] holds it), "null", "unknown".
  std::string va(CUdeviceptr p) const {
    if (p == 0) return "null";
    for (size_t k = m_regions.size(); k-- > 0;) {
      const region& r = m_regions[k];
      if (p >= r.base && p - r.base <= r.size)
        return p == r.base ? r.name : r.name + "+" + sz(p - r.base);
    }
    return "unknown";
  }
  std::string ctx_name(CUcontext c) const {
    if (!c) return "null";
    for (const auto& [n, h] : m_ctx)
      if (h == c) return n;
    return "other";
  }
  std::string hname(CUmemGenericAllocationHandle h) const {
    if (h == 0) return "0";
    for (size_t k = m_handles.size(); k-- > 0;)
      if (m_handles[k].h == h) return m_handles[k].name;
    return "unknown";
  }
  // A handle a call returned: "same as H3" or "new" (then named `n`).
  std::string got_handle(CUmemGenericAllocationHandle h, const std::string& n, size_t size) {
    if (h == 0) return "0";
    for (size_t k = m_handles.size(); k-- > 0;)
      if (m_handles[k].h == h && m_handles[k].live) return "same as " + m_handles[k].name;
    m_handles.push_back({n, h, size, true});
    return "new (" + n + ")";
  }
  // The largest power of two dividing a VA, capped at `cap`.
  static std::string align(CUdeviceptr p, uint64_t cap = 2 * MiB) {
    if (p == 0) return "-";
    uint64_t a = 1;
    while (a < cap && p % (a * 2) == 0) a *= 2;
    return sz(a) + (a >= cap ? "+" : "");
  }
  std::string id_name(std::map<unsigned long long, std::string>& ids, unsigned long long id,
                      const std::string& who) {
    if (id == 0) return "0";
    auto it = ids.find(id);
    if (it != ids.end()) return "same as " + it->second;
    ids[id] = who;
    return "new";
  }
  static std::string prop_desc(const CUmemAllocationProp& p) {
    std::string s = fmt("{type=%d loc=%d:%d types=0x%x gdr=%d", int(p.type), int(p.location.type),
                        p.location.id, unsigned(p.requestedHandleTypes),
                        int(p.allocFlags.gpuDirectRDMACapable));
    if (p.allocFlags.compressionType) s += fmt(" comp=%d", int(p.allocFlags.compressionType));
    if (p.allocFlags.usage) s += fmt(" usage=%d", int(p.allocFlags.usage));
    return s + "}";
  }
  static CUmemAllocationProp dev_prop(int id = 0, unsigned types = 0, unsigned char gdr = 0) {
    CUmemAllocationProp p;
    std::memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = id;
    p.requestedHandleTypes = (CUmemAllocationHandleType)types;
    p.allocFlags.gpuDirectRDMACapable = gdr;
    return p;
  }

  // --- calls, one line each -----------------------------------------------------------------
  void granularity(const CUmemAllocationProp* prop, int option, const std::string& why = "") {
    size_t g = 12345;
    const CUresult r =
        cuMemGetAllocationGranularity(&g, prop, (CUmemAllocationGranularity_flags)option);
    std::string s =
        fmt("cuMemGetAllocationGranularity(prop=%s, option=%d)%s -> %s",
            prop ? prop_desc(*prop).c_str() : "NULL", option, why.c_str(), res(r).c_str());
    if (r == CUDA_SUCCESS) s += " granularity=" + sz(g);
    line(s);
  }

  // cuMemAddressReserve; the reservation is named `n` if it succeeds. Returns its index.
  // `at` names the requested address (else it is named after the regions).
  int reserve(const std::string& n, size_t size, size_t alignment, CUdeviceptr addr = 0,
              unsigned long long flags = 0, const std::string& why = "",
              const std::string& at = "") {
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
  CUresult addr_free(CUdeviceptr p, size_t size, const std::string& why = "") {
    const std::string name = va(p);
    const CUresult r = cuMemAddressFree(p, size);
    line(fmt("cuMemAddressFree(%s, size=%s)%s -> %s", name.c_str(), sz(size).c_str(), why.c_str(),
             res(r).c_str()));
    if (r == CUDA_SUCCESS)
      for (region& q : m_regions)
        if (q.live && q.vmm && q.base == p) q.live = false;
    return r;
  }
  int alloc(const std::string& n, size_t size) {
    CUdeviceptr p = 0;
    const CUresult r = cuMemAlloc(&p, size);
    std::string s = fmt("cuMemAlloc(size=%s) -> %s", sz(size).c_str(), res(r).c_str());
    if (r != CUDA_SUCCESS) {
      line(s);
      return -1;
    }
    std::string near;
    for (const region& q : m_regions)
      if (q.live) near += fmt(" %s_start%s", q.name.c_str(), ssz((long long)(p - q.base)).c_str());
    s += " " + n + " align=" + align(p);
    m_regions.push_back({n, p, size, true, false});
    line(s);
    line("# " + n + ": align=" + align(p, uint64_t(1) << 46) + near);
    return int(m_regions.size()) - 1;
  }

  // cuMemCreate; the handle is named `n` if it succeeds. Returns the handle (0 on failure).
  CUmemGenericAllocationHandle create(const std::string& n, size_t size,
                                      const CUmemAllocationProp& prop, unsigned long long flags = 0,
                                      const std::string& why = "") {
    CUmemGenericAllocationHandle h = 0;
    const CUresult r = cuMemCreate(&h, size, &prop, flags);
    std::string s = fmt("cuMemCreate(size=%s, prop=%s, flags=%llu)%s -> %s", sz(size).c_str(),
                        prop_desc(prop).c_str(), flags, why.c_str(), res(r).c_str());
    if (r != CUDA_SUCCESS) {
      line(s);
      return 0;
    }
    std::string reused;
    for (const handle_rec& q : m_handles)
      if (q.h == h) reused = "# " + n + ": the handle value of released " + q.name;
    if (h == 0)
      s += " handle=0";
    else
      s += " " + n;
    m_handles.push_back({n, h, size, true});
    line(s);
    if (!reused.empty()) line(reused);
    return h;
  }
  CUresult release(CUmemGenericAllocationHandle h, const std::string& why = "") {
    const CUresult r = cuMemRelease(h);
    line(fmt("cuMemRelease(%s)%s -> %s", hname(h).c_str(), why.c_str(), res(r).c_str()));
    if (r == CUDA_SUCCESS)
      for (size_t k = m_handles.size(); k-- > 0;)
        if (m_handles[k].h == h && m_handles[k].live) {
          m_handles[k].live = false;
          break;
        }
    return r;
  }
  void props(CUmemGenericAllocationHandle h, const std::string& why = "") {
    CUmemAllocationProp p;
    std::memset(&p, 0xAB, sizeof p);
    const CUresult r = cuMemGetAllocationPropertiesFromHandle(&p, h);
    std::string s = fmt("cuMemGetAllocationPropertiesFromHandle(%s)%s -> %s", hname(h).c_str(),
                        why.c_str(), res(r).c_str());
    if (r == CUDA_SUCCESS)
      s += " " + prop_desc(p) +
           fmt(" win32=%s", p.win32HandleMetaData == nullptr ? "null" : "nonnull");
    line(s);
  }

  CUresult map(CUdeviceptr p, size_t size, size_t offset, CUmemGenericAllocationHandle h,
               unsigned long long flags = 0, const std::string& why = "") {
    const CUresult r = cuMemMap(p, size, offset, h, flags);
    line(fmt("cuMemMap(%s, size=%s, offset=%s, %s, flags=%llu)%s -> %s", va(p).c_str(),
             sz(size).c_str(), sz(offset).c_str(), hname(h).c_str(), flags, why.c_str(),
             res(r).c_str()));
    return r;
  }
  CUresult unmap(CUdeviceptr p, size_t size, const std::string& why = "") {
    const CUresult r = cuMemUnmap(p, size);
    line(fmt("cuMemUnmap(%s, size=%s)%s -> %s", va(p).c_str(), sz(size).c_str(), why.c_str(),
             res(r).c_str()));
    return r;
  }
  // cuMemSetAccess with one descriptor (location type, id, flags), or none if count is 0.
  CUresult set_access(CUdeviceptr p, size_t size, int type, int id, unsigned flags,
                      size_t count = 1, const std::string& why = "") {
    CUmemAccessDesc d[2];
    std::memset(d, 0, sizeof d);
    d[0].location.type = (CUmemLocationType)type;
    d[0].location.id = id;
    d[0].flags = (CUmemAccess_flags)flags;
    d[1] = d[0];
    const CUresult r = cuMemSetAccess(p, size, count ? d : nullptr, count);
    line(fmt("cuMemSetAccess(%s, size=%s, {loc=%d:%d flags=0x%x} x%zu)%s -> %s", va(p).c_str(),
             sz(size).c_str(), type, id, flags, count, why.c_str(), res(r).c_str()));
    return r;
  }
  CUresult rw(CUdeviceptr p, size_t size, const std::string& why = "") {
    return set_access(p, size, CU_MEM_LOCATION_TYPE_DEVICE, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
                      1, why);
  }
  // The flags, or ~0 if the call fails.
  unsigned long long get_access(CUdeviceptr p, int type = CU_MEM_LOCATION_TYPE_DEVICE, int id = 0,
                                const std::string& why = "") {
    CUmemLocation loc;
    loc.type = (CUmemLocationType)type;
    loc.id = id;
    unsigned long long f = 0xABAB;
    const CUresult r = cuMemGetAccess(&f, &loc, p);
    std::string s = fmt("cuMemGetAccess(%s, loc=%d:%d)%s -> %s", va(p).c_str(), type, id,
                        why.c_str(), res(r).c_str());
    if (r == CUDA_SUCCESS) s += fmt(" flags=0x%llx", f);
    line(s);
    return r == CUDA_SUCCESS ? f : ~0ull;
  }

  // One pointer attribute, printed in a form that does not vary run to run.
  void attr(int a, CUdeviceptr p, const std::string& why = "") {
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
  void attrs(CUdeviceptr p, bool all = true, const std::string& why = "") {
    if (all)
      for (int a : all_attrs) attr(a, p, why);
    else
      for (int a : short_attrs) attr(a, p, why);
    range(p, why);
  }
  void range(CUdeviceptr p, const std::string& why = "") {
    CUdeviceptr base = 0;
    size_t size = 0;
    const CUresult r = cuMemGetAddressRange(&base, &size, p);
    std::string s =
        fmt("cuMemGetAddressRange(%s)%s -> %s", va(p).c_str(), why.c_str(), res(r).c_str());
    if (r == CUDA_SUCCESS) s += " base=" + va(base) + " size=" + sz(size);
    line(s);
  }
  void retain(CUdeviceptr p, const std::string& n, const std::string& why = "") {
    CUmemGenericAllocationHandle h = 0;
    const CUresult r = cuMemRetainAllocationHandle(&h, (void*)(uintptr_t)p);
    std::string s =
        fmt("cuMemRetainAllocationHandle(%s)%s -> %s", va(p).c_str(), why.c_str(), res(r).c_str());
    if (r == CUDA_SUCCESS) {
      // A retained handle is a reference: counted as a handle of its own to release.
      bool known = false;
      for (size_t k = m_handles.size(); k-- > 0 && !known;)
        if (m_handles[k].h == h) {
          s += " handle=same as " + m_handles[k].name + (m_handles[k].live ? "" : " (released)");
          known = true;
        }
      if (!known) {
        s += " handle=new (" + n + ")";
        m_handles.push_back({n, h, 0, true});
      }
      line(s);
      line("cuMemRelease(the retained reference) -> " + res(cuMemRelease(h)));
      return;
    }
    line(s);
  }

  // --- memory -------------------------------------------------------------------------------
  static unsigned char pat(size_t i, unsigned seed) {
    return (unsigned char)(i * 7 + seed * 13 + (i >> 12));
  }
  // HtoD of pattern `seed` (its byte i at offset i) into [p, p + n).
  CUresult put(CUdeviceptr p, size_t n, unsigned seed, const std::string& why = "") {
    std::vector<unsigned char> b(n);
    for (size_t i = 0; i < n; ++i) b[i] = pat(i, seed);
    const CUresult r = cuMemcpyHtoD(p, b.data(), n);
    line(fmt("cuMemcpyHtoD(%s, host, %s)%s -> %s", va(p).c_str(), sz(n).c_str(), why.c_str(),
             res(r).c_str()));
    return r;
  }
  // DtoH of [p, p + n); whether it holds pattern `seed` from byte `off` of the pattern on.
  bool check(CUdeviceptr p, size_t n, unsigned seed, size_t off = 0, const std::string& why = "") {
    std::vector<unsigned char> b(n, 0);
    const CUresult r = cuMemcpyDtoH(b.data(), p, n);
    std::string s = fmt("cuMemcpyDtoH(host, %s, %s)%s -> %s", va(p).c_str(), sz(n).c_str(),
                        why.c_str(), res(r).c_str());
    bool ok = true, zeros = true;
    for (size_t i = 0; i < n; ++i) {
      ok = ok && b[i] == pat(i + off, seed);
      zeros = zeros && b[i] == 0;
    }
    if (r == CUDA_SUCCESS)
      s += std::string(" bytes ") + (ok ? "ok" : zeros ? "differ, all zero" : "differ");
    line(s);
    return r == CUDA_SUCCESS && ok;
  }
  CUresult sync(const std::string& why = "") {
    const CUresult r = cuCtxSynchronize();
    line("cuCtxSynchronize" + why + " -> " + res(r));
    return r;
  }
  void current(const std::string& why = "") {
    CUcontext c = (CUcontext)(uintptr_t)1;
    const CUresult r = cuCtxGetCurrent(&c);
    line(fmt("cuCtxGetCurrent%s -> %s ctx=%s", why.c_str(), res(r).c_str(), ctx_name(c).c_str()));
  }
  void primary_state() {
    unsigned pf = 0;
    int active = -1;
    const CUresult rp = cuDevicePrimaryCtxGetState(0, &pf, &active);
    line(fmt("# cuDevicePrimaryCtxGetState(0) -> %s flags=0x%x active=%d", res(rp).c_str(), pf,
             active));
  }
  CUcontext new_context(const std::string& n) {
    CUcontext c = nullptr;
    line("cuCtxCreate " + n + " -> " + res(ctx_create(&c, 0, 0)));
    m_ctx.push_back({n, c});
    return c;
  }
  CUdeviceptr base(int k) const { return k >= 0 ? m_regions[k].base : 0; }

  void before_init();
  void no_context();
  void device_attributes();
  void granularities();
  void reservations();
  void creates();
  void maps();
  void pointer_attributes();
  void unmaps();
  void sharing();
  void destroyed_context();
  void undefined();

  const sink& m_out;
  std::vector<region> m_regions;
  std::vector<handle_rec> m_handles;
  std::map<unsigned long long, std::string> m_buffer_ids, m_block_ids;
  std::vector<std::pair<std::string, CUcontext>> m_ctx;
  int m_last_res = -1;
  CUcontext m_c = nullptr;
  size_t m_gran = 2 * MiB;
  int m_handle_n = 0;
  // Kept from the map section for the next ones: the reservation M and its handles.
  int m_m = -1;
  CUmemGenericAllocationHandle m_h2 = 0, m_h4 = 0, m_hx = 0;
  bool m_ok = false;  // both of M's mappings read-write and filled with pattern 6
  std::string hn() { return fmt("H%d", m_handle_n++); }
};

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

void vmm_sequence::creates() {
  line("== cuMemCreate and cuMemRelease");
  const CUmemAllocationProp p = dev_prop();
  std::vector<CUmemGenericAllocationHandle> made;
  for (size_t size : {2 * MiB, 4 * MiB, MiB, size_t(0), 2 * MiB + 4 * KiB, 64 * KiB, 1 * GiB}) {
    const CUmemGenericAllocationHandle h = create(hn(), size, p);
    if (h) {
      props(h);
      made.push_back(h);
    }
  }
  for (unsigned long long f : {1ull, 2ull}) {
    const CUmemGenericAllocationHandle h = create(hn(), 2 * MiB, p, f);
    if (h) made.push_back(h);
  }
  for (unsigned char gdr : {1, 0, 2}) {
    const CUmemGenericAllocationHandle h = create(hn(), 2 * MiB, dev_prop(0, 0, gdr));
    if (h) {
      props(h);
      made.push_back(h);
    }
  }
  for (int id : {1, -1}) {
    const CUmemGenericAllocationHandle h = create(hn(), 2 * MiB, dev_prop(id), 0, " bad device");
    if (h) made.push_back(h);
  }
  for (unsigned types : {1u, 2u, 8u, 0x10u}) {
    const CUmemGenericAllocationHandle h = create(hn(), 2 * MiB, dev_prop(0, types));
    if (h) {
      props(h);
      made.push_back(h);
    }
  }
  {
    CUmemAllocationProp q = dev_prop();
    q.type = (CUmemAllocationType)0;
    CUmemGenericAllocationHandle h = create(hn(), 2 * MiB, q, 0, " type INVALID");
    if (h) made.push_back(h);
    q = dev_prop();
    q.type = CU_MEM_ALLOCATION_TYPE_MANAGED;
    h = create(hn(), 2 * MiB, q, 0, " type MANAGED");
    if (h) made.push_back(h);
    q = dev_prop();
    q.location.type = (CUmemLocationType)0;
    h = create(hn(), 2 * MiB, q, 0, " location type INVALID");
    if (h) made.push_back(h);
    q = dev_prop();
    q.location.type = CU_MEM_LOCATION_TYPE_HOST;
    h = create(hn(), 2 * MiB, q, 0, " location HOST");
    if (h) {
      props(h);
      made.push_back(h);
    }
    q = dev_prop();
    q.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
    h = create(hn(), 2 * MiB, q, 0, " location HOST_NUMA 0");
    if (h) {
      props(h);
      made.push_back(h);
    }
    q = dev_prop();
    q.allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_GENERIC;
    h = create(hn(), 2 * MiB, q, 0, " compressible");
    if (h) {
      props(h);
      made.push_back(h);
    }
  }
  for (CUmemGenericAllocationHandle h : made) release(h);
  release(0, " handle 0");
  props(0, " handle 0");
}

void vmm_sequence::maps() {
  line("== cuMemMap and cuMemSetAccess");
  const CUmemAllocationProp p = dev_prop();
  const int m = reserve("M", 16 * MiB, 0);
  if (m < 0) return;
  const CUdeviceptr mb = base(m);
  const CUmemGenericAllocationHandle h2 = create(hn(), 2 * MiB, p);
  const CUmemGenericAllocationHandle h4 = create(hn(), 4 * MiB, p);
  const CUmemGenericAllocationHandle hx = create(hn(), 2 * MiB, p);
  map(mb, 2 * MiB, 0, h2);
  attrs(mb, false, " mapped, no access yet");
  get_access(mb, CU_MEM_LOCATION_TYPE_DEVICE, 0, " no access yet");
  // Misuse, each with a handle not mapped yet (hx) where the handle does not matter.
  map(mb + 5 * MiB, 2 * MiB, 0, hx, 0, " VA not 2MiB aligned");
  map(mb + 4 * MiB + 64 * KiB, 2 * MiB, 0, hx, 0, " VA 64KiB aligned");
  // Driver 580 accepts this one (only the start must lie in a reservation) and the mapping is
  // left in place: the next reservation (Ja) is placed under its tail, and neither M nor Ja can
  // be freed later. The transcript records those consequences; keep the order.
  map(mb + 14 * MiB, 4 * MiB, 0, h4, 0, " past the reservation end");
  map(mb + 16 * MiB, 2 * MiB, 0, hx, 0, " at the reservation end");
  map(mb, 2 * MiB, 0, hx, 0, " range already mapped");
  map(mb + MiB, 2 * MiB, 0, hx, 0, " overlapping a mapping");
  map(mb + 4 * MiB, 4 * MiB, 0, hx, 0, " larger than the handle");
  map(mb + 4 * MiB, MiB, 0, hx, 0, " size not a multiple");
  map(mb + 4 * MiB, 0, 0, hx, 0, " size 0");
  map(mb + 4 * MiB, 2 * MiB, MiB, h4, 0, " handle offset 1MiB");
  if (map(mb + 4 * MiB, 2 * MiB, 2 * MiB, h4, 0, " handle offset 2MiB") == CUDA_SUCCESS) {
    attrs(mb + 4 * MiB, false, " mapped at handle offset 2MiB");
    unmap(mb + 4 * MiB, 2 * MiB);
  }
  map(mb + 4 * MiB, 4 * MiB, 2 * MiB, h4, 0, " handle offset + size past the handle");
  for (unsigned long long f : {1ull, 2ull}) map(mb + 4 * MiB, 2 * MiB, 0, hx, f, " flags");
  map(mb + 4 * MiB, 2 * MiB, 0, 0, 0, " handle 0");
  map(0, 2 * MiB, 0, hx, 0, " VA null");
  {
    const int a = alloc("A", 2 * MiB);
    if (a >= 0) map(base(a), 2 * MiB, 0, hx, 0, " onto cuMemAlloc memory");
  }
  // Two adjacent reservations, a mapping across their boundary.
  {
    const int ra = reserve("Ja", 2 * MiB, 0);
    const int rb =
        ra >= 0 ? reserve("Jb", 2 * MiB, 0, base(ra) + 2 * MiB, 0, " after Ja", "Ja+2MiB") : -1;
    if (rb >= 0 && base(rb) == base(ra) + 2 * MiB) {
      if (map(base(ra), 4 * MiB, 0, h4, 0, " across two adjacent reservations") == CUDA_SUCCESS) {
        attrs(base(ra), false, " mapped across two reservations");
        attr(a_range_start, base(rb), " mapped across two reservations");
        attr(a_range_size, base(rb), " mapped across two reservations");
        rw(base(ra), 4 * MiB, " across two reservations");
        put(base(ra), 4 * MiB, 2, " across two reservations");
        check(base(ra), 4 * MiB, 2, 0, " across two reservations");
        addr_free(base(ra), 2 * MiB, " while mapped");
        unmap(base(ra), 4 * MiB);
      }
    }
    if (ra >= 0) addr_free(base(ra), 2 * MiB);
    if (rb >= 0) addr_free(base(rb), 2 * MiB);
  }
  // The second handle right after the first: one contiguous mapped range of two handles.
  map(mb + 2 * MiB, 4 * MiB, 0, h4);
  // Access.
  rw(mb, 2 * MiB);
  get_access(mb);
  get_access(mb + 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 0, " second mapping, no access yet");
  get_access(mb + 8 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 0, " unmapped");
  get_access(mb, CU_MEM_LOCATION_TYPE_DEVICE, 1, " bad device");
  get_access(mb, CU_MEM_LOCATION_TYPE_HOST, 0, " host");
  rw(mb + 8 * MiB, 2 * MiB, " unmapped");
  rw(mb, 16 * MiB, " mapped and unmapped");
  rw(mb + 2 * MiB, 2 * MiB, " half of a mapping");
  rw(mb + MiB, 2 * MiB, " not 2MiB aligned, across two mappings");
  rw(mb, MiB, " part of a mapping, not 2MiB");
  rw(mb, 6 * MiB, " two mappings");
  get_access(mb + 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 0, " after access on both");
  rw(mb, 0, " size 0");
  set_access(mb, 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 1, 3, 1, " bad device 1");
  set_access(mb, 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, -1, 3, 1, " bad device -1");
  set_access(mb, 2 * MiB, CU_MEM_LOCATION_TYPE_HOST, 0, 3, 1, " host");
  set_access(mb, 2 * MiB, 0, 0, 3, 1, " location type INVALID");
  set_access(mb, 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 0, 2, 1, " flags 0x2");
  set_access(mb, 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 0, 7, 1, " flags 0x7");
  set_access(mb, 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 0, 3, 0, " no descriptors");
  set_access(mb, 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 0, 3, 2, " the same device twice");
  set_access(0, 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 0, 3, 1, " VA null");
  get_access(mb, CU_MEM_LOCATION_TYPE_DEVICE, 0, " after the misuse");
  // READ only, then NONE, then READWRITE again, on the first mapping.
  set_access(mb, 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 0, CU_MEM_ACCESS_FLAGS_PROT_READ);
  get_access(mb);
  attr(a_access_flags, mb, " PROT_READ");
  check(mb, 4 * KiB, 0, 0, " PROT_READ (bytes never written)");
  set_access(mb, 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 0, CU_MEM_ACCESS_FLAGS_PROT_NONE);
  get_access(mb);
  attr(a_access_flags, mb, " PROT_NONE");
  // Read-write on both mappings, one call each, before any copy (a copy into memory without
  // access may fault the context: those come last).
  const bool ok2 = rw(mb, 2 * MiB) == CUDA_SUCCESS;
  const bool ok4 = rw(mb + 2 * MiB, 4 * MiB) == CUDA_SUCCESS;
  const bool ok = ok2 && ok4 && get_access(mb) == 3 && get_access(mb + 2 * MiB) == 3;
  if (!ok) line("# M's mappings are not both read-write: the copies are left out");
  // Copies, bytes checked.
  if (ok) {
    put(mb, 2 * MiB, 3);
    check(mb, 2 * MiB, 3);
    put(mb + 2 * MiB, 4 * MiB, 4);
    check(mb + 2 * MiB, 4 * MiB, 4);
    put(mb + MiB, 2 * MiB, 5, " spanning two handles");
    check(mb + MiB, 2 * MiB, 5, 0, " spanning two handles");
    check(mb + MiB, MiB, 5, 0, " the first handle's part");
    check(mb + 2 * MiB, MiB, 5, MiB, " the second handle's part");
    line("cuMemsetD8(M+1MiB, 0x5a, 2MiB) spanning two handles -> " +
         res(cuMemsetD8(mb + MiB, 0x5a, 2 * MiB)));
    std::vector<unsigned char> b(2 * MiB);
    const CUresult r2 = cuMemcpyDtoH(b.data(), mb + MiB, 2 * MiB);
    bool same = true;
    for (unsigned char c : b) same = same && c == 0x5a;
    line("cuMemcpyDtoH(host, M+1MiB, 2MiB) after the memset -> " + res(r2) +
         (r2 == CUDA_SUCCESS ? (same ? " bytes ok" : " bytes differ") : ""));
    put(mb, 6 * MiB, 6, " both handles whole");
    check(mb, 6 * MiB, 6, 0, " both handles whole");
    for (const region& a : m_regions)
      if (a.name == "A" && a.live) {
        const CUresult r = cuMemcpyDtoD(a.base, mb + MiB, 2 * MiB);
        line("cuMemcpyDtoD(A, M+1MiB, 2MiB) spanning two handles -> " + res(r));
        check(a.base, 2 * MiB, 6, MiB, " A, from M+1MiB");
        line("cuMemcpyDtoD(M+1MiB, A, 2MiB) spanning two handles -> " +
             res(cuMemcpyDtoD(mb + MiB, a.base, 2 * MiB)));
        check(mb, 6 * MiB, 6, 0, " both handles whole, after the copy back");
      }
  }
  m_ok = ok;
  // Kept for the pointer attribute and unmap sections.
  m_m = m;
  m_h2 = h2;
  m_h4 = h4;
  m_hx = hx;
}

void vmm_sequence::pointer_attributes() {
  line("== pointer attributes of VMM memory");
  if (m_m < 0) return;
  const CUdeviceptr mb = base(m_m);
  attrs(mb, true, " mapped start");
  attrs(mb + MiB, true, " mapped interior");
  attrs(mb + 2 * MiB, true, " second mapping's start");
  attrs(mb + 5 * MiB, false, " second mapping's interior");
  attrs(mb + 8 * MiB, false, " unmapped, in the reservation");
  attrs(mb + 16 * MiB, false, " the reservation's end");
  // A handle released while mapped.
  const CUmemAllocationProp p = dev_prop();
  const int q = reserve("Q", 4 * MiB, 0);
  const CUmemGenericAllocationHandle hr = create(hn(), 2 * MiB, p);
  if (q >= 0 && hr) {
    const CUdeviceptr qb = base(q);
    const bool ok = map(qb, 2 * MiB, 0, hr) == CUDA_SUCCESS && rw(qb, 2 * MiB) == CUDA_SUCCESS;
    if (ok) put(qb, 2 * MiB, 7);
    attr(a_buffer_id, qb, " before the release");
    attr(a_block_id, qb, " before the release");
    release(hr, " while mapped");
    props(hr, " released while mapped");
    attrs(qb, false, " handle released while mapped");
    if (ok &&
        get_access(qb, CU_MEM_LOCATION_TYPE_DEVICE, 0, " handle released while mapped") == 3) {
      check(qb, 2 * MiB, 7, 0, " handle released while mapped");
      put(qb, 2 * MiB, 8, " handle released while mapped");
      check(qb, 2 * MiB, 8, 0, " handle released while mapped");
    }
    retain(qb + MiB, hn(), " handle released while mapped");
    if (map(qb + 2 * MiB, 2 * MiB, 0, hr, 0, " the released handle, again") == CUDA_SUCCESS)
      unmap(qb + 2 * MiB, 2 * MiB);
    unmap(qb, 2 * MiB);
    attrs(qb, false, " after cuMemUnmap");
    addr_free(qb, 4 * MiB);
  }
  // BUFFER_ID and MEMORY_BLOCK_ID across unmap and remap of the same handle at the same VA.
  const int b = reserve("B", 4 * MiB, 0);
  const CUmemGenericAllocationHandle hb = create(hn(), 2 * MiB, p);
  if (b >= 0 && hb) {
    const CUdeviceptr bb = base(b);
    map(bb, 2 * MiB, 0, hb);
    rw(bb, 2 * MiB);
    attr(a_buffer_id, bb, " first mapping");
    attr(a_block_id, bb, " first mapping");
    unmap(bb, 2 * MiB);
    map(bb, 2 * MiB, 0, hb, 0, " the same handle again");
    attr(a_buffer_id, bb, " remapped");
    attr(a_block_id, bb, " remapped");
    attr(a_access_flags, bb, " remapped, before cuMemSetAccess");
    get_access(bb, CU_MEM_LOCATION_TYPE_DEVICE, 0, " remapped, before cuMemSetAccess");
    unmap(bb, 2 * MiB);
    map(bb + 2 * MiB, 2 * MiB, 0, hb, 0, " the same handle at another VA");
    rw(bb + 2 * MiB, 2 * MiB);
    attr(a_buffer_id, bb + 2 * MiB, " remapped at B+2MiB");
    attr(a_block_id, bb + 2 * MiB, " remapped at B+2MiB");
    unmap(bb + 2 * MiB, 2 * MiB);
    release(hb);
    addr_free(bb, 4 * MiB);
  }
  // A cuMemAlloc allocation, for comparison.
  for (size_t k = 0; k < m_regions.size(); ++k)
    if (m_regions[k].name == "A" && m_regions[k].live) {
      attr(a_mapping_size, m_regions[k].base + MiB, " cuMemAlloc memory");
      attr(a_mapping_base, m_regions[k].base + MiB, " cuMemAlloc memory");
      attr(a_block_id, m_regions[k].base + MiB, " cuMemAlloc memory");
      attr(a_handle_types, m_regions[k].base + MiB, " cuMemAlloc memory");
      attr(a_access_flags, m_regions[k].base + MiB, " cuMemAlloc memory");
      retain(m_regions[k].base, hn(), " cuMemAlloc memory");
    }
}

void vmm_sequence::unmaps() {
  line("== cuMemUnmap, remapping");
  if (m_m < 0) return;
  const CUdeviceptr mb = base(m_m);
  unmap(mb, MiB, " half of a mapping");
  unmap(mb + MiB, MiB, " the second half of a mapping");
  unmap(mb + 2 * MiB, 2 * MiB, " the first half of the 4MiB mapping");
  unmap(mb + 8 * MiB, 2 * MiB, " unmapped");
  unmap(mb + 6 * MiB, 2 * MiB, " unmapped, right after a mapping");
  const bool whole = unmap(mb, 16 * MiB, " the whole reservation") == CUDA_SUCCESS;
  unmap(mb + 2 * MiB, 4 * MiB);
  unmap(mb + 2 * MiB, 4 * MiB, " twice");
  unmap(0, 2 * MiB, " VA null");
  attrs(mb + 2 * MiB, false, " after cuMemUnmap");
  if (!whole && m_ok && get_access(mb) == 3)
    check(mb, 2 * MiB, 6, 0, " the first mapping, still mapped");
  unmap(mb, 2 * MiB);
  // Two mappings unmapped in one call.
  map(mb, 2 * MiB, 0, m_h2);
  map(mb + 2 * MiB, 4 * MiB, 0, m_h4);
  unmap(mb, 6 * MiB, " two mappings at once");
  attr(a_mapped, mb + 2 * MiB, " after unmapping two at once");
  unmap(mb + 2 * MiB, 4 * MiB, " in case it was not");
  unmap(mb, 2 * MiB, " in case it was not");
  // The same handle at another offset: its bytes kept while unmapped.
  if (map(mb + 8 * MiB, 2 * MiB, 0, m_h2, 0, " at another offset") == CUDA_SUCCESS) {
    if (rw(mb + 8 * MiB, 2 * MiB) == CUDA_SUCCESS && m_ok)
      check(mb + 8 * MiB, 2 * MiB, 6, 0, " bytes kept across unmap and remap");
    unmap(mb + 8 * MiB, 2 * MiB);
  }
  // Two different handles at one VA, one after the other.
  if (map(mb, 2 * MiB, 0, m_h2) == CUDA_SUCCESS) {
    const bool w = rw(mb, 2 * MiB) == CUDA_SUCCESS &&
                   put(mb, 2 * MiB, 9, " into the first handle") == CUDA_SUCCESS;
    unmap(mb, 2 * MiB);
    if (map(mb, 2 * MiB, 0, m_hx, 0, " another handle at the same VA") == CUDA_SUCCESS) {
      if (rw(mb, 2 * MiB) == CUDA_SUCCESS) {
        if (w) check(mb, 2 * MiB, 9, 0, " the other handle at the same VA");
        put(mb, 2 * MiB, 10, " into the other handle");
      }
      unmap(mb, 2 * MiB);
    }
    if (map(mb, 2 * MiB, 0, m_h2, 0, " the first handle again") == CUDA_SUCCESS) {
      if (rw(mb, 2 * MiB) == CUDA_SUCCESS && w) check(mb, 2 * MiB, 9, 0, " the first handle again");
      unmap(mb, 2 * MiB);
    }
  }
  // One handle at two VAs in two reservations.
  const int y1 = reserve("Y1", 2 * MiB, 0);
  const int y2 = reserve("Y2", 2 * MiB, 0);
  if (y1 >= 0 && y2 >= 0) {
    const CUdeviceptr a = base(y1), b = base(y2);
    const bool ma = map(a, 2 * MiB, 0, m_hx) == CUDA_SUCCESS;
    const bool mb2 = map(b, 2 * MiB, 0, m_hx, 0, " the same handle a second time") == CUDA_SUCCESS;
    const bool ok = ma && mb2 && rw(a, 2 * MiB) == CUDA_SUCCESS && rw(b, 2 * MiB) == CUDA_SUCCESS;
    if (ok) {
      check(b, 2 * MiB, 10, 0, " Y2: what was written before");
      put(a, 2 * MiB, 11, " through Y1");
      check(b, 2 * MiB, 11, 0, " through Y2");
      put(b + MiB, 4 * KiB, 12, " through Y2");
      check(a + MiB, 4 * KiB, 12, 0, " through Y1");
    }
    if (ma && mb2) {
      attr(a_buffer_id, a, " Y1");
      attr(a_buffer_id, b, " Y2");
      attr(a_block_id, a, " Y1");
      attr(a_block_id, b, " Y2");
      attr(a_range_start, b + MiB, " Y2");
      attr(a_range_size, b + MiB, " Y2");
      attr(a_mapping_base, b + MiB, " Y2");
      retain(b + MiB, hn(), " Y2");
      unmap(a, 2 * MiB);
      if (ok) check(b, 4 * KiB, 11, 0, " Y2 after unmapping Y1");
    } else if (ma) {
      unmap(a, 2 * MiB);
    }
    addr_free(a, 2 * MiB);
    addr_free(b, 2 * MiB, " while mapped");
    if (mb2) unmap(b, 2 * MiB);
    addr_free(b, 2 * MiB);
  }
  release(m_h2);
  release(m_h4);
  release(m_hx);
  addr_free(mb, 16 * MiB);
}

void vmm_sequence::sharing() {
  line("== shareable handles, retain, properties");
  const CUmemGenericAllocationHandle hp = create(hn(), 2 * MiB, dev_prop(0, 1));
  const CUmemGenericAllocationHandle hnn = create(hn(), 2 * MiB, dev_prop(0, 0));
  int fd = -1;
  if (hp) {
    props(hp);
    const CUresult r =
        cuMemExportToShareableHandle(&fd, hp, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    line(fmt("cuMemExportToShareableHandle(%s, POSIX_FD, flags=0) -> %s%s", hname(hp).c_str(),
             res(r).c_str(), r == CUDA_SUCCESS ? (fd >= 0 ? " fd>=0" : " fd<0") : ""));
    if (r == CUDA_SUCCESS) line(fmt("# fd=%d", fd));
    int fd2 = -1;
    CUresult r2 =
        cuMemExportToShareableHandle(&fd2, hp, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    line(fmt("cuMemExportToShareableHandle(%s, POSIX_FD, flags=0) again -> %s%s", hname(hp).c_str(),
             res(r2).c_str(), r2 == CUDA_SUCCESS ? (fd2 == fd ? " fd=same" : " fd=other") : ""));
    if (r2 == CUDA_SUCCESS && fd2 >= 0 && fd2 != fd) named_memory::fd_close(fd2);
    int fd3 = -1;
    r2 = cuMemExportToShareableHandle(&fd3, hp, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 1);
    line(fmt("cuMemExportToShareableHandle(%s, POSIX_FD, flags=1) -> %s", hname(hp).c_str(),
             res(r2).c_str()));
    if (r2 == CUDA_SUCCESS && fd3 >= 0) named_memory::fd_close(fd3);
    unsigned char buf[64] = {};
    for (int t : {0, 8}) {
      r2 = cuMemExportToShareableHandle(buf, hp, (CUmemAllocationHandleType)t, 0);
      line(fmt("cuMemExportToShareableHandle(%s, type=%d, flags=0) -> %s", hname(hp).c_str(), t,
               res(r2).c_str()));
    }
    line(fmt(
        "cuMemExportToShareableHandle(NULL, %s, POSIX_FD, flags=0) -> %s", hname(hp).c_str(),
        res(cuMemExportToShareableHandle(nullptr, hp, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0))
            .c_str()));
  }
  if (hnn) {
    int f = -1;
    const CUresult r =
        cuMemExportToShareableHandle(&f, hnn, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    line(fmt("cuMemExportToShareableHandle(%s, POSIX_FD, flags=0) created without it -> %s",
             hname(hnn).c_str(), res(r).c_str()));
    if (r == CUDA_SUCCESS && f >= 0) named_memory::fd_close(f);
  }
  {
    int f = -1;
    line("cuMemExportToShareableHandle(0, POSIX_FD, flags=0) -> " +
         res(cuMemExportToShareableHandle(&f, 0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)));
  }
  // Import in the same process.
  const int z = reserve("Z", 4 * MiB, 0);
  if (fd >= 0 && z >= 0) {
    const CUdeviceptr zb = base(z);
    const bool w = map(zb, 2 * MiB, 0, hp) == CUDA_SUCCESS && rw(zb, 2 * MiB) == CUDA_SUCCESS &&
                   put(zb, 2 * MiB, 13, " through the exported handle") == CUDA_SUCCESS;
    CUmemGenericAllocationHandle hi = 0;
    CUresult r = cuMemImportFromShareableHandle(&hi, (void*)(uintptr_t)fd,
                                                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    std::string s = "cuMemImportFromShareableHandle(fd, POSIX_FD) -> " + res(r);
    if (r == CUDA_SUCCESS) s += " handle=" + got_handle(hi, hn(), 2 * MiB);
    line(s);
    CUmemGenericAllocationHandle hi2 = 0;
    r = cuMemImportFromShareableHandle(&hi2, (void*)(uintptr_t)fd,
                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    s = "cuMemImportFromShareableHandle(fd, POSIX_FD) again -> " + res(r);
    if (r == CUDA_SUCCESS) s += " handle=" + got_handle(hi2, hn(), 2 * MiB);
    line(s);
    line("close(fd) -> " + std::string(named_memory::fd_close(fd) == 0 ? "0" : "-1"));
    if (hi) {
      props(hi, " imported");
      if (map(zb + 2 * MiB, 2 * MiB, 0, hi, 0, " the imported handle") == CUDA_SUCCESS &&
          rw(zb + 2 * MiB, 2 * MiB) == CUDA_SUCCESS && w)
        check(zb + 2 * MiB, 2 * MiB, 13, 0, " through the imported handle");
      attr(a_buffer_id, zb, " exported handle's mapping");
      attr(a_buffer_id, zb + 2 * MiB, " imported handle's mapping");
      attr(a_block_id, zb, " exported handle's mapping");
      attr(a_block_id, zb + 2 * MiB, " imported handle's mapping");
      attr(a_handle_types, zb, " exported handle's mapping");
      attr(a_handle_types, zb + 2 * MiB, " imported handle's mapping");
      retain(zb + 2 * MiB + MiB, hn(), " imported handle's mapping");
      unmap(zb + 2 * MiB, 2 * MiB);
    }
    if (hi2 && hi2 != hi) release(hi2, " the second import");
    if (hi) release(hi, " the import");
    if (hi && hi2 == hi) release(hi2, " the second import (same handle)");
    unmap(zb, 2 * MiB);
  }
  {
    CUmemGenericAllocationHandle h = 0;
    for (int bad : {-1, 9999}) {
      const CUresult r = cuMemImportFromShareableHandle(&h, (void*)(intptr_t)bad,
                                                        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
      line(fmt("cuMemImportFromShareableHandle(fd=%d, POSIX_FD) -> %s", bad, res(r).c_str()));
    }
    // On the model this is a descriptor the simulated process does not have open: a file
    // CUDA did not make, to the driver.
    const int dn = open("/dev/null", O_RDONLY);
    const CUresult r = cuMemImportFromShareableHandle(&h, (void*)(intptr_t)dn,
                                                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    line("cuMemImportFromShareableHandle(fd of /dev/null, POSIX_FD) -> " + res(r));
    if (dn >= 0) close(dn);
  }
  // Retain on mapped VAs, interior, unmapped, never reserved.
  if (z >= 0 && hnn) {
    const CUdeviceptr zb = base(z);
    map(zb, 2 * MiB, 0, hnn);
    retain(zb, hn(), " mapped start");
    retain(zb + MiB + 4 * KiB, hn(), " mapped interior");
    retain(zb + 2 * MiB, hn(), " unmapped, in the reservation");
    {
      CUmemGenericAllocationHandle h = 0;
      line("cuMemRetainAllocationHandle(null) -> " + res(cuMemRetainAllocationHandle(&h, nullptr)));
      line("cuMemRetainAllocationHandle(NULL handle, Z) -> " +
           res(cuMemRetainAllocationHandle(nullptr, (void*)(uintptr_t)zb)));
    }
    // A retained reference keeps the handle: release the original, the retained one stays.
    CUmemGenericAllocationHandle h = 0;
    const CUresult r = cuMemRetainAllocationHandle(&h, (void*)(uintptr_t)zb);
    line(fmt("cuMemRetainAllocationHandle(Z) kept -> %s handle=%s", res(r).c_str(),
             h == hnn ? "same" : "other"));
    release(hnn, " the original, a retained reference left");
    props(hnn, " one reference left");
    if (r == CUDA_SUCCESS) {
      // Restore the record so that the retained reference can be released by name.
      m_handles.push_back({hname(hnn), h, 2 * MiB, true});
      release(h, " the retained reference");
    }
    unmap(zb, 2 * MiB);
  } else if (hnn) {
    release(hnn);
  }
  if (hp)
    line("cuMemGetAllocationPropertiesFromHandle(NULL, " + hname(hp) + ") -> " +
         res(cuMemGetAllocationPropertiesFromHandle(nullptr, hp)));
  if (hp) release(hp);
  if (z >= 0) addr_free(base(z), 4 * MiB);
  props(0, " handle 0");
}

void vmm_sequence::destroyed_context() {
  line("== cuCtxDestroy with mappings live");
  const CUmemAllocationProp p = dev_prop();
  CUcontext d = new_context("D");
  const int rd = reserve("RD", 4 * MiB, 0);
  const CUmemGenericAllocationHandle hd = create(hn(), 2 * MiB, p);
  const CUmemGenericAllocationHandle hd2 = create(hn(), 2 * MiB, p);
  bool ok = false, written = false;
  if (rd >= 0 && hd && hd2) {
    ok = map(base(rd), 2 * MiB, 0, hd) == CUDA_SUCCESS;
    written =
        ok && rw(base(rd), 2 * MiB) == CUDA_SUCCESS && put(base(rd), 2 * MiB, 14) == CUDA_SUCCESS;
    attr(a_context, base(rd), " in D");
  }
  line("cuCtxDestroy(D) -> " + res(cuCtxDestroy(d)));
  current();
  line("cuCtxSetCurrent(C) -> " + res(cuCtxSetCurrent(m_c)));
  if (ok) {
    const CUdeviceptr b = base(rd);
    attrs(b, false, " after cuCtxDestroy(D)");
    attr(a_device_ordinal, b, " after cuCtxDestroy(D)");
    if (get_access(b, CU_MEM_LOCATION_TYPE_DEVICE, 0, " after cuCtxDestroy(D)") == 3 && written)
      check(b, 2 * MiB, 14, 0, " after cuCtxDestroy(D)");
    props(hd, " after cuCtxDestroy(D)");
    map(b + 2 * MiB, 2 * MiB, 0, hd2, 0, " after cuCtxDestroy(D)");
    rw(b + 2 * MiB, 2 * MiB, " after cuCtxDestroy(D)");
    unmap(b + 2 * MiB, 2 * MiB, " after cuCtxDestroy(D)");
    unmap(b, 2 * MiB, " after cuCtxDestroy(D)");
    release(hd, " after cuCtxDestroy(D)");
    release(hd2, " after cuCtxDestroy(D)");
    addr_free(b, 4 * MiB, " after cuCtxDestroy(D)");
  }
  // C, the last context, destroyed with a mapping, a reservation and a handle live.
  const int rc = reserve("RC", 4 * MiB, 0);
  const CUmemGenericAllocationHandle hc = create(hn(), 2 * MiB, p);
  const CUmemGenericAllocationHandle hc2 = create(hn(), 2 * MiB, p);
  bool okc = false, writtenc = false;
  if (rc >= 0 && hc && hc2) {
    okc = map(base(rc), 2 * MiB, 0, hc) == CUDA_SUCCESS;
    writtenc =
        okc && rw(base(rc), 2 * MiB) == CUDA_SUCCESS && put(base(rc), 2 * MiB, 15) == CUDA_SUCCESS;
  }
  // Everything else of C's goes first.
  for (region& r : m_regions)
    if (!r.vmm && r.live) {
      line("cuMemFree(" + r.name + ") -> " + res(cuMemFree(r.base)));
      r.live = false;
    }
  line("cuCtxDestroy(C) -> " + res(cuCtxDestroy(m_c)));
  current();
  if (okc) {
    const CUdeviceptr b = base(rc);
    const std::string why = " after cuCtxDestroy(C), no context";
    line("cuCtxSetCurrent(NULL) -> " + res(cuCtxSetCurrent(nullptr)));
    attr(a_mapped, b, why);
    attr(a_context, b, why);
    attr(a_range_size, b, why);
    get_access(b, CU_MEM_LOCATION_TYPE_DEVICE, 0, why);
    props(hc, why);
    map(b + 2 * MiB, 2 * MiB, 0, hc2, 0, why);
    rw(b + 2 * MiB, 2 * MiB, why);
    primary_state();
    CUcontext e = new_context("E");
    (void)e;
    attrs(b, false, " in E");
    if (get_access(b, CU_MEM_LOCATION_TYPE_DEVICE, 0, " in E") == 3 && writtenc)
      check(b, 2 * MiB, 15, 0, " in E");
    attr(a_mapped, b + 2 * MiB, " in E");
    unmap(b + 2 * MiB, 2 * MiB, " in E");
    unmap(b, 2 * MiB, " in E");
    release(hc, " in E");
    release(hc2, " in E");
    addr_free(b, 4 * MiB, " in E");
  } else {
    new_context("E");
  }
}

// Last: calls whose outcome the reference leaves undefined or that may fault the context.
void vmm_sequence::undefined() {
  line("== copies into memory without access (may fault), releasing twice");
  const CUmemAllocationProp p = dev_prop();
  CUcontext f = new_context("F");
  const int s = reserve("S", 8 * MiB, 0);
  const CUmemGenericAllocationHandle h = create(hn(), 2 * MiB, p);
  const CUmemGenericAllocationHandle hr = create(hn(), 2 * MiB, p);
  if (s >= 0 && h && hr) {
    const CUdeviceptr sb = base(s);
    map(sb, 2 * MiB, 0, h);
    // Mapped, no access set.
    put(sb, 4 * KiB, 16, " mapped, no cuMemSetAccess");
    sync();
    check(sb, 4 * KiB, 16, 0, " mapped, no cuMemSetAccess");
    sync();
    rw(sb, 2 * MiB);
    put(sb, 2 * MiB, 17, " after cuMemSetAccess");
    check(sb, 2 * MiB, 17, 0, " after cuMemSetAccess");
    // An unmapped hole of a partly mapped reservation.
    map(sb + 4 * MiB, 2 * MiB, 0, hr);
    rw(sb + 4 * MiB, 2 * MiB);
    put(sb + 2 * MiB, 4 * KiB, 18, " unmapped hole");
    sync(" after the copy into the hole");
    check(sb + 2 * MiB, 4 * KiB, 18, 0, " unmapped hole");
    sync();
    put(sb + MiB, 2 * MiB, 19, " from a mapping into the hole");
    sync();
    put(sb, 6 * MiB, 20, " across the hole");
    sync();
    check(sb, 4 * KiB, 17, 0, " the first mapping, still usable?");
    // Read only.
    set_access(sb + 4 * MiB, 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 0,
               CU_MEM_ACCESS_FLAGS_PROT_READ);
    check(sb + 4 * MiB, 4 * KiB, 0, 0, " PROT_READ");
    put(sb + 4 * MiB, 4 * KiB, 21, " PROT_READ");
    sync(" after the write to PROT_READ");
    check(sb + 4 * MiB, 4 * KiB, 21, 0, " PROT_READ");
    sync();
    unmap(sb, 2 * MiB);
    unmap(sb + 4 * MiB, 2 * MiB);
    addr_free(sb, 8 * MiB);
  }
  line("cuCtxDestroy(F) -> " + res(cuCtxDestroy(f)));
  for (const auto& [n, c] : m_ctx)
    if (n == "E") line("cuCtxSetCurrent(E) -> " + res(cuCtxSetCurrent(c)));
  if (h) release(h);
  if (h) release(h, " twice");
  if (hr) release(hr);
  const CUmemGenericAllocationHandle h3 = create(hn(), 2 * MiB, p, 0, " after releasing twice");
  if (h3) release(h3);
}

void vmm_sequence::run() {
  before_init();
  no_context();
  device_attributes();
  granularities();
  reservations();
  creates();
  maps();
  pointer_attributes();
  unmaps();
  sharing();
  destroyed_context();
  undefined();
  line("== end");
}

}  // namespace

void run_vmm(const sink& out) {
  vmm_sequence s(out);
  s.run();
}

}  // namespace cuda_probe
