// The probe's virtual-memory-management sequence (`probe --vmm`, probe_vmm.cpp): the class
// that runs it, its naming helpers and its one-line calls. Its sections are in probe_vmm.cpp
// (before cuInit to reservations), probe_vmm_maps.cpp (handles, mappings, attributes,
// unmapping) and probe_vmm_sharing.cpp (shareable handles, destroyed contexts, undefined
// calls).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include "probe.h"
#include "probe_named_memory.h"

namespace cuda_probe::vmm {

inline constexpr uint64_t GiB = 1024 * MiB;

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
inline constexpr int all_attrs[] = {
    a_context,      a_memory_type, a_device_pointer, a_host_pointer,   a_p2p_tokens,
    a_sync_memops,  a_buffer_id,   a_is_managed,     a_device_ordinal, a_legacy_ipc,
    a_range_start,  a_range_size,  a_mapped,         a_handle_types,   a_gdr,
    a_access_flags, a_mempool,     a_mapping_size,   a_mapping_base,   a_block_id,
    a_hw_decompress};
// The ones that tell what a range is and whether it is usable.
inline constexpr int short_attrs[] = {a_context,      a_memory_type, a_buffer_id,    a_range_start,
                                      a_range_size,   a_mapped,      a_access_flags, a_mapping_size,
                                      a_mapping_base, a_block_id};

// A size or offset: "2MiB", "4KiB", or bytes.
inline std::string sz(uint64_t v) {
  if (v == 0) return "0";
  if (v % GiB == 0) return fmt("%lluGiB", (unsigned long long)(v / GiB));
  if (v % MiB == 0) return fmt("%lluMiB", (unsigned long long)(v / MiB));
  if (v % KiB == 0) return fmt("%lluKiB", (unsigned long long)(v / KiB));
  return fmt("%llu", (unsigned long long)v);
}
inline std::string ssz(long long v) {
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
              const std::string& at = "");
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
  void attr(int a, CUdeviceptr p, const std::string& why = "");
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

}  // namespace cuda_probe::vmm
