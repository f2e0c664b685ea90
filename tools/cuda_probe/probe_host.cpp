// The probe's host-memory sequence (`probe --host`): page-locked memory from cuMemHostAlloc and
// pageable memory pinned with cuMemHostRegister, before cuInit, without a context, in one
// context, in a second one and after their contexts are destroyed, with every misuse a program
// makes: the flags each call takes and what cuMemHostGetFlags answers for them, the device
// pointer and pointer attributes of pinned and registered memory (the range the driver records
// for a registration that is not page aligned), registering a range twice, overlapping,
// adjacent or inside pinned memory, unregistering and freeing the wrong thing, and copies
// between the GPU and registered memory, wholly or partly registered, their bytes checked.
//
// Nothing that varies run to run is printed: host memory is named after this run's own blocks
// ("U+100"; the cuMemHostAlloc ones start with P or N, the others come from posix_memalign and
// a '#' line says so), contexts by name (H, H2, G, K), buffer IDs as "new" / "same as <first
// pointer that had it>", alignment only up to a page. Lines starting with '#' are comments; the
// comparison with the model leaves them out. Transcript from an H200:
// tests/data/cuda_probe/h200_cuda13_host.txt.
#include <unistd.h>
#include <cerrno>

#include "probe.h"

namespace cuda_probe {

namespace {

constexpr uint64_t GiB = 1024 * MiB;
constexpr size_t page = 4096;

// cuMemHostAlloc / cuMemHostRegister flags (cuda.h's CU_MEMHOSTALLOC_* / CU_MEMHOSTREGISTER_*).
constexpr unsigned portable = 0x1, devicemap = 0x2, writecombined = 0x4, iomemory = 0x4,
                   read_only = 0x8;

// CUpointer_attribute, by number (cuda.h).
enum : int {
  a_context = 1,
  a_memory_type = 2,
  a_device_pointer = 3,
  a_host_pointer = 4,
  a_buffer_id = 7,
  a_device_ordinal = 9,
  a_range_start = 11,
  a_range_size = 12,
  a_mapped = 13,
  a_gdr = 15,
  a_access_flags = 16,
};

// A block of host memory this run made: pinned (cuMemHostAlloc) or pageable (posix_memalign).
struct block {
  std::string name;
  uintptr_t base;
  size_t size;
  bool pinned = false;
};

class host_sequence {
 public:
  explicit host_sequence(const sink& out) : m_out(out) {}
  void run();

 private:
  void line(const std::string& s) { m_out(s); }
  static std::string res(CUresult r) { return result_name(r); }

  // --- naming -------------------------------------------------------------------------------
  // A host address after this run's blocks: "X" or "X+off" (latest block whose [base,
  // base + size] holds it), "null", else "other".
  std::string name(uintptr_t p) const {
    if (p == 0) return "null";
    for (size_t k = m_blocks.size(); k-- > 0;) {
      const block& b = m_blocks[k];
      if (p >= b.base && p - b.base <= b.size)
        return p == b.base ? b.name : fmt("%s+%zu", b.name.c_str(), (size_t)(p - b.base));
    }
    // Below a block (a range rounded down past its start).
    for (size_t k = m_blocks.size(); k-- > 0;) {
      const block& b = m_blocks[k];
      if (p < b.base && b.base - p < 2 * MiB)
        return fmt("%s-%zu", b.name.c_str(), (size_t)(b.base - p));
    }
    return "other";
  }
  std::string name(const void* p) const { return name((uintptr_t)p); }
  std::string ctx_name(CUcontext c) const {
    if (!c) return "null";
    for (const auto& [n, h] : m_ctx)
      if (h == c) return n;
    return "other";
  }
  // The largest power of two dividing an address, capped at a page: beyond that, where the
  // kernel's mmap puts a mapping is random.
  static std::string align(uintptr_t p) {
    if (p == 0) return "-";
    uint64_t a = 1;
    while (a < page && p % (a * 2) == 0) a *= 2;
    return a >= page ? std::string("page") : fmt("%llu", (unsigned long long)a);
  }
  static std::string hex(unsigned v) { return fmt("0x%x", v); }

  // --- memory -------------------------------------------------------------------------------
  static void fill(void* p, size_t n, unsigned seed) {
    auto* b = static_cast<unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) b[i] = (unsigned char)(i * 7 + seed * 13 + (i >> 12));
  }
  static bool holds(const void* p, size_t n, unsigned seed) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i)
      if (b[i] != (unsigned char)(i * 7 + seed * 13 + (i >> 12))) return false;
    return true;
  }
  // Pageable memory, aligned as asked; never freed (the process ends soon after).
  unsigned char* pageable(const std::string& n, size_t alignment, size_t size) {
    void* p = nullptr;
    if (posix_memalign(&p, alignment, size) != 0) {
      line(fmt("# %s: posix_memalign failed", n.c_str()));
      std::exit(1);
    }
    m_blocks.push_back({n, (uintptr_t)p, size});
    fill(p, size, unsigned(m_blocks.size()));
    line(
        fmt("# %s: pageable, posix_memalign(alignment=%zu, size=%zu)", n.c_str(), alignment, size));
    return static_cast<unsigned char*>(p);
  }
  // cuMemHostAlloc; the block is named `n` if it succeeds.
  unsigned char* pinned(const std::string& n, size_t size, unsigned flags,
                        const std::string& why = "") {
    void* p = nullptr;
    const CUresult r = cuMemHostAlloc(&p, size, flags);
    std::string s = fmt("cuMemHostAlloc(size=%zu, flags=%s)%s -> %s", size, hex(flags).c_str(),
                        why.c_str(), res(r).c_str());
    // Where it lies inside an earlier pinned block (live or freed), if it does: how the driver
    // packs and reuses pinned memory. A '#' line: it follows the kernel's mmap placement too
    // (a block freed and mapped again), which the model does not reproduce.
    std::string at;
    if (r == CUDA_SUCCESS) {
      s += " " + (p ? n : std::string("null")) + " align=" + align((uintptr_t)p);
      for (size_t k = m_blocks.size(); p && k-- > 0;) {
        const block& b = m_blocks[k];
        if (b.pinned && (uintptr_t)p >= b.base && (uintptr_t)p < b.base + b.size) {
          at = "# " + n + " at=" + name(p);
          break;
        }
      }
      // Named up to its last page's end: the probe asks about bytes past a short block.
      if (p) m_blocks.push_back({n, (uintptr_t)p, (size + page - 1) / page * page, true});
    }
    line(s);
    if (!at.empty()) line(at);
    return r == CUDA_SUCCESS ? static_cast<unsigned char*>(p) : nullptr;
  }

  // --- calls, one line each -----------------------------------------------------------------
  CUresult reg(void* p, size_t size, unsigned flags, const std::string& why = "") {
    const CUresult r = cuMemHostRegister(p, size, flags);
    line(fmt("cuMemHostRegister(%s, size=%zu, flags=%s)%s -> %s", name(p).c_str(), size,
             hex(flags).c_str(), why.c_str(), res(r).c_str()));
    return r;
  }
  CUresult unreg(void* p, const std::string& why = "") {
    const CUresult r = cuMemHostUnregister(p);
    line(fmt("cuMemHostUnregister(%s)%s -> %s", name(p).c_str(), why.c_str(), res(r).c_str()));
    return r;
  }
  CUresult free_host(void* p, const std::string& why = "") {
    const CUresult r = cuMemFreeHost(p);
    line(fmt("cuMemFreeHost(%s)%s -> %s", name(p).c_str(), why.c_str(), res(r).c_str()));
    return r;
  }
  void get_flags(void* p, const std::string& why = "") {
    unsigned f = 0xdeadbeef;
    const CUresult r = cuMemHostGetFlags(&f, p);
    std::string s =
        fmt("cuMemHostGetFlags(%s)%s -> %s", name(p).c_str(), why.c_str(), res(r).c_str());
    if (r == CUDA_SUCCESS) s += " flags=" + hex(f);
    line(s);
  }
  void dev_ptr(void* p, unsigned flags, const std::string& why = "") {
    CUdeviceptr d = 0;
    const CUresult r = cuMemHostGetDevicePointer(&d, p, flags);
    std::string s = fmt("cuMemHostGetDevicePointer(%s, flags=%u)%s -> %s", name(p).c_str(), flags,
                        why.c_str(), res(r).c_str());
    if (r == CUDA_SUCCESS)
      s += " dptr=" + (d == (CUdeviceptr)(uintptr_t)p ? std::string("=host") : name(d)) +
           " align=" + align(d);
    line(s);
  }
  // One pointer attribute, printed in a form that does not vary run to run.
  void attr(int a, const void* p, const std::string& why = "") {
    union {
      unsigned char raw[64];
      CUcontext ctx;
      unsigned int u;
      int i;
      CUdeviceptr dp;
      void* host;
      unsigned long long ull;
      size_t sz;
    } v;
    std::memset(v.raw, 0xAB, sizeof v.raw);
    const CUresult r =
        cuPointerGetAttribute(v.raw, (CUpointer_attribute)a, (CUdeviceptr)(uintptr_t)p);
    std::string s = fmt("cuPointerGetAttribute(%s=%d, %s)%s -> %s", attr_name(a), a,
                        name(p).c_str(), why.c_str(), res(r).c_str());
    if (r == CUDA_SUCCESS) {
      switch (a) {
        case a_context:
          s += " ctx=" + ctx_name(v.ctx);
          break;
        case a_device_pointer:
          s += " ptr=" + (v.dp == (CUdeviceptr)(uintptr_t)p ? std::string("=arg") : name(v.dp));
          break;
        case a_host_pointer:
          s += " ptr=" + (v.host == p ? std::string("=arg") : name(v.host));
          break;
        case a_range_start:
          s += " start=" + (v.dp == (CUdeviceptr)(uintptr_t)p ? std::string("=arg") : name(v.dp));
          break;
        case a_range_size:
          s += fmt(" size=%zu", v.sz);
          break;
        case a_buffer_id:
          s += " id=" + buffer_id(v.ull, name(p));
          break;
        default:
          s += fmt(" value=%u", v.u);
      }
    }
    line(s);
  }
  void attrs(const void* p, const std::string& why = "") {
    for (int a : {a_memory_type, a_context, a_device_pointer, a_host_pointer, a_range_start,
                  a_range_size, a_buffer_id, a_device_ordinal, a_mapped, a_gdr, a_access_flags})
      attr(a, p, why);
  }
  std::string buffer_id(unsigned long long id, const std::string& who) {
    if (id == 0) return "0";
    auto it = m_ids.find(id);
    if (it != m_ids.end()) return "same as " + it->second;
    m_ids[id] = who;
    return "new";
  }
  // Everything a program asks of host memory: its flags and device pointer (on the start and
  // a byte inside), every pointer attribute.
  void examine(unsigned char* p, size_t inside, bool full = true) {
    get_flags(p);
    get_flags(p + inside);
    dev_ptr(p, 0);
    dev_ptr(p, 1);
    dev_ptr(p + inside, 0);
    attrs(p);
    if (full) attrs(p + inside);
  }

  // Whether the CPU may still read and write `n` bytes at p (a pipe's read and write say
  // EFAULT rather than crash), and whether they still hold the pattern `seed`.
  bool cpu_access(unsigned char* p, size_t n, unsigned seed, const std::string& why) {
    int fds[2];
    if (pipe(fds) != 0) return false;
    std::vector<unsigned char> got(n);
    const ssize_t w = write(fds[1], p, n);
    std::string s = fmt("CPU access %s%s: read=", name(p).c_str(), why.c_str());
    const bool readable = w == (ssize_t)n && read(fds[0], got.data(), n) == (ssize_t)n;
    if (readable)
      s += holds(got.data(), n, seed) ? "ok bytes kept" : "ok bytes changed";
    else
      s += errno == EFAULT ? "EFAULT" : "failed";
    // Writes back what it read (zeros where it could not read).
    const ssize_t w2 = write(fds[1], got.data(), n);
    const bool writable = w2 == (ssize_t)n && read(fds[0], p, n) == (ssize_t)n;
    s += writable ? " write=ok" : errno == EFAULT ? " write=EFAULT" : " write=failed";
    close(fds[0]);
    close(fds[1]);
    line(s);
    return readable && writable;
  }

  // HtoD from `p`, then DtoH back into it (zeroed first), through the device buffer; Async on
  // the stream if `async`. Prints the three or five calls and whether the bytes came back.
  void round_trip(unsigned char* p, size_t n, bool async, const std::string& why = "") {
    const unsigned seed = ++m_seed;
    // What the device holds before (an earlier pattern), through pageable memory of our own.
    std::vector<unsigned char> before(n), back(n);
    cuMemcpyDtoH(before.data(), m_dev, n);
    fill(p, n, seed);
    const char* a = async ? "Async" : "";
    CUresult r = async ? cuMemcpyHtoDAsync(m_dev, p, n, m_stream) : cuMemcpyHtoD(m_dev, p, n);
    line(fmt("cuMemcpyHtoD%s(dev, %s, %zu)%s -> %s", a, name(p).c_str(), n, why.c_str(),
             res(r).c_str()));
    if (async) line("cuStreamSynchronize -> " + res(cuStreamSynchronize(m_stream)));
    r = cuMemcpyDtoH(back.data(), m_dev, n);
    line(fmt("  device now holds %s's bytes: %s", name(p).c_str(),
             r != CUDA_SUCCESS             ? res(r).c_str()
             : holds(back.data(), n, seed) ? "yes"
             : back == before              ? "no, unchanged"
                                           : "no, partly changed"));
    std::memset(p, 0, n);
    r = async ? cuMemcpyDtoHAsync(p, m_dev, n, m_stream) : cuMemcpyDtoH(p, m_dev, n);
    const CUresult rs = async ? cuStreamSynchronize(m_stream) : CUDA_SUCCESS;
    bool zeros = true;
    for (size_t i = 0; i < n && zeros; ++i) zeros = p[i] == 0;
    const char* bytes = holds(p, n, seed) ? "ok" : zeros ? "differ, host unchanged" : "differ";
    if (async) {
      line(fmt("cuMemcpyDtoH%s(%s, dev, %zu)%s -> %s", a, name(p).c_str(), n, why.c_str(),
               res(r).c_str()));
      line(fmt("cuStreamSynchronize -> %s bytes %s", res(rs).c_str(), bytes));
    } else {
      line(fmt("cuMemcpyDtoH%s(%s, dev, %zu)%s -> %s bytes %s", a, name(p).c_str(), n, why.c_str(),
               res(r).c_str(), bytes));
    }
  }

  void before_init();
  void no_context();
  void device_attributes();
  void host_alloc();
  void host_register();
  void overlaps();
  void copies();
  void none_current();
  void second_context();
  void destroyed_context();
  void destroy_last();

  const sink& m_out;
  std::vector<block> m_blocks;
  std::map<unsigned long long, std::string> m_ids;
  std::vector<std::pair<std::string, CUcontext>> m_ctx;
  CUcontext m_h = nullptr;
  CUdeviceptr m_dev = 0;  // 4 MiB in H
  CUstream m_stream = nullptr;
  unsigned m_seed = 100;
  // Kept from one section to the next.
  unsigned char *m_p0 = nullptr, *m_p1 = nullptr;          // pinned in H: flags 0, PORTABLE
  unsigned char *m_r0 = nullptr, *m_r1 = nullptr;          // registered in H: flags 0, PORTABLE
  unsigned char *m_keep_p = nullptr, *m_keep_r = nullptr;  // alive when H is destroyed
  // cuMemHostRegister's blocks, left registered for the unregister section.
  unsigned char *m_a = nullptr, *m_b = nullptr, *m_c = nullptr, *m_u = nullptr, *m_v = nullptr;
};

void host_sequence::before_init() {
  line("== host memory before cuInit");
  unsigned char* s = pageable("S", page, 2 * page);
  void* p = nullptr;
  line("cuMemHostAlloc(size=4096, flags=0x0) -> " + res(cuMemHostAlloc(&p, 4096, 0)));
  line("cuMemAllocHost(size=4096) -> " + res(cuMemAllocHost(&p, 4096)));
  line("cuMemHostRegister(S, size=4096, flags=0x0) -> " + res(cuMemHostRegister(s, 4096, 0)));
  line("cuMemHostUnregister(S) -> " + res(cuMemHostUnregister(s)));
  CUdeviceptr d = 0;
  line("cuMemHostGetDevicePointer(S, flags=0) -> " + res(cuMemHostGetDevicePointer(&d, s, 0)));
  unsigned f = 0;
  line("cuMemHostGetFlags(S) -> " + res(cuMemHostGetFlags(&f, s)));
  line("cuMemFreeHost(S) -> " + res(cuMemFreeHost(s)));
  line("cuMemFreeHost(NULL) -> " + res(cuMemFreeHost(nullptr)));
  unsigned t = 0;
  line("cuPointerGetAttribute(MEMORY_TYPE=2, S) -> " +
       res(cuPointerGetAttribute(&t, (CUpointer_attribute)a_memory_type,
                                 (CUdeviceptr)(uintptr_t)s)));
  line("cuInit(0) -> " + res(cuInit(0)));
}

void host_sequence::no_context() {
  line("== no context current");
  CUcontext c = (CUcontext)(uintptr_t)1;
  CUresult r = cuCtxGetCurrent(&c);
  line(fmt("cuCtxGetCurrent -> %s ctx=%s", res(r).c_str(), ctx_name(c).c_str()));
  unsigned char* n0 = pinned("N0", 64 * KiB, 0, " without context");
  if (n0) {
    get_flags(n0, " without context");
    dev_ptr(n0, 0, " without context");
    attr(a_memory_type, n0, " without context");
    attr(a_context, n0, " without context");
    attr(a_range_size, n0, " without context");
  }
  unsigned char* n1 = pinned("N1", 64 * KiB, portable | devicemap, " without context");
  unsigned char* nr = pageable("NR", page, 64 * KiB);
  const CUresult rr = reg(nr, 64 * KiB, 0, " without context");
  if (rr == CUDA_SUCCESS) {
    get_flags(nr, " without context");
    dev_ptr(nr, 0, " without context");
    attr(a_memory_type, nr, " without context");
    attr(a_context, nr, " without context");
  }
  attr(a_memory_type, nr + 64 * KiB, " without context");
  {
    void* q = nullptr;
    const CUresult ra = cuMemAllocHost(&q, 64 * KiB);
    line("cuMemAllocHost(size=65536) without context -> " + res(ra));
    if (ra == CUDA_SUCCESS) cuMemFreeHost(q);
  }
  unsigned char* nq = pageable("NQ", page, 64 * KiB);
  get_flags(nq, " without context, never registered");
  dev_ptr(nq, 0, " without context, never registered");
  unreg(nq, " without context, never registered");
  free_host(nq, " without context");
  unreg(nullptr, " without context");
  line("cuMemFreeHost(NULL) without context -> " + res(cuMemFreeHost(nullptr)));
  r = cuCtxGetCurrent(&c);
  line(fmt("cuCtxGetCurrent -> %s ctx=%s", res(r).c_str(), ctx_name(c).c_str()));
#ifndef CUDA_PROBE_MODEL
  {
    unsigned pf = 0;
    int active = -1;
    const CUresult rp = cuDevicePrimaryCtxGetState(0, &pf, &active);
    line(fmt("# cuDevicePrimaryCtxGetState(0) -> %s flags=0x%x active=%d", res(rp).c_str(), pf,
             active));
  }
#endif

  line("cuCtxCreate H -> " + res(ctx_create(&m_h, 0, 0)));
  m_ctx.push_back({"H", m_h});
  r = cuMemAlloc(&m_dev, 4 * MiB);
  line("cuMemAlloc(dev, 4 MiB) -> " + res(r));
  line("cuStreamCreate -> " + res(cuStreamCreate(&m_stream, 0)));
  if (n0) {
    attr(a_context, n0, " with H current");
    get_flags(n0, " with H current");
    round_trip(n0, 64 * KiB, false);
  }
  if (n1) {
    attr(a_context, n1, " with H current");
    get_flags(n1, " with H current");
  }
  if (rr == CUDA_SUCCESS) {
    attr(a_context, nr, " with H current");
    get_flags(nr, " with H current");
    round_trip(nr, 64 * KiB, false);
    unreg(nr);
  }
  if (n0) free_host(n0);
  if (n1) free_host(n1);
}

void host_sequence::device_attributes() {
  line("== device attributes");
  static const struct {
    const char* name;
    int value;
  } attrs[] = {
      {"INTEGRATED", 18},
      {"CAN_MAP_HOST_MEMORY", 19},
      {"UNIFIED_ADDRESSING", 41},
      {"PAGEABLE_MEMORY_ACCESS", 88},
      {"CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM", 91},
      {"HOST_REGISTER_SUPPORTED", 99},
      {"PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES", 100},
      {"VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED", 102},
      {"HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED", 103},
      {"GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED", 110},
      {"READ_ONLY_HOST_REGISTER_SUPPORTED", 113},
      {"GPU_DIRECT_RDMA_SUPPORTED", 116},
      {"DMA_BUF_SUPPORTED", 124},
      {"IPC_EVENT_SUPPORTED", 125},
      {"HOST_ALLOC_DMA_BUF_SUPPORTED", 146},
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

void host_sequence::host_alloc() {
  line("== cuMemHostAlloc");
  void* p = nullptr;
  line("cuMemHostAlloc(NULL, size=4096, flags=0x0) -> " + res(cuMemHostAlloc(nullptr, 4096, 0)));
  {
    p = (void*)(uintptr_t)1;
    const CUresult r = cuMemHostAlloc(&p, 0, 0);
    line(fmt("cuMemHostAlloc(size=0, flags=0x0) -> %s ptr=%s", res(r).c_str(),
             p == nullptr               ? "null"
             : p == (void*)(uintptr_t)1 ? "unwritten"
                                        : "nonnull"));
    if (r == CUDA_SUCCESS && p) {
      m_blocks.push_back({"Z", (uintptr_t)p, 0});
      get_flags(p);
      attr(a_memory_type, p);
      attr(a_range_size, p);
      free_host(p);
    }
  }
  const unsigned flags[] = {0,    portable, devicemap, writecombined, 7,          8,
                            0x10, 0x20,     0x100,     0x80000000u,   0xFFFFFFFFu};
  std::vector<unsigned char*> got;
  int k = 0;
  for (unsigned f : flags) {
    unsigned char* q = pinned(fmt("P%d", k), 64 * KiB, f);
    if (!q) continue;
    ++k;
    examine(q, 100);
    round_trip(q, 64 * KiB, false);
    got.push_back(q);
  }
  // Sizes that are not a page, and a big one.
  unsigned char* small = pinned("Psmall", 100, 0);
  if (small) {
    get_flags(small + 50);
    attr(a_range_start, small + 50);
    attr(a_range_size, small + 50);
    attr(a_range_size, small + 100);
    attr(a_memory_type, small + 200);
    attr(a_memory_type, small + 4095);
    dev_ptr(small + 50, 0);
    round_trip(small, 100, false);
    round_trip(small, 200, false, " past the end");
    round_trip(small + 50, 100, true, " past the end");
  }
  unsigned char* odd = pinned("Podd", 64 * KiB + 1, devicemap);
  if (odd) {
    attr(a_range_size, odd);
    attr(a_memory_type, odd + 64 * KiB + 1);
    attr(a_memory_type, odd + 64 * KiB + 100);
  }
  unsigned char* big = pinned("Pbig", GiB, 0);
  if (big) {
    get_flags(big + GiB - 1);
    dev_ptr(big, 0);
    attr(a_range_start, big + GiB / 2);
    attr(a_range_size, big + GiB / 2);
    attr(a_memory_type, big + GiB);
    round_trip(big + GiB - 4 * MiB, 4 * MiB, true);
  }
  // Frees: a byte inside, the start, the start again, and what is left.
  if (!got.empty()) {
    unsigned char* q = got[0];
    free_host(q + 100);
    free_host(q + 4096);
    free_host(q);
    free_host(q, " again");
    get_flags(q, " after cuMemFreeHost");
    dev_ptr(q, 0, " after cuMemFreeHost");
    attr(a_memory_type, q, " after cuMemFreeHost");
    for (size_t i = 1; i < got.size(); ++i) free_host(got[i]);
  }
  if (small) free_host(small);
  if (odd) free_host(odd);
  if (big) free_host(big);
  // Two kept for later sections: flags 0 and PORTABLE.
  m_p0 = pinned("Pkeep0", 64 * KiB, 0);
  m_p1 = pinned("Pkeep1", 64 * KiB, portable);
  p = nullptr;
  const CUresult r = cuMemAllocHost(&p, 64 * KiB);
  line("cuMemAllocHost(size=65536) -> " + res(r) + (r == CUDA_SUCCESS ? " Pah" : ""));
  if (r == CUDA_SUCCESS && p) {
    m_blocks.push_back({"Pah", (uintptr_t)p, 64 * KiB, true});
    get_flags(p);
    free_host(p);
  }
}

void host_sequence::host_register() {
  line("== cuMemHostRegister");
  // Page-aligned, whole pages.
  unsigned char* a = pageable("A", page, page);
  if (reg(a, page, 0) == CUDA_SUCCESS) {
    examine(a, 100);
    round_trip(a, page, false);
  }
  unsigned char* b = pageable("B", 2 * MiB, 2 * MiB);
  if (reg(b, MiB, 0) == CUDA_SUCCESS) {
    examine(b, 4096, false);
    attr(a_range_start, b + MiB - 1);
    attr(a_range_size, b + MiB - 1);
    attr(a_memory_type, b + MiB);
    get_flags(b + MiB);
  }
  // One byte over a page multiple.
  unsigned char* c = pageable("C", 2 * MiB, 2 * MiB);
  if (reg(c, MiB + 1, 0) == CUDA_SUCCESS) {
    attrs(c);
    for (size_t off : {MiB, MiB + 1, MiB + 100, MiB + page - 1, MiB + page}) {
      attr(a_memory_type, c + off);
      attr(a_range_start, c + off);
      attr(a_range_size, c + off);
      get_flags(c + off);
    }
  }
  // Not page aligned: 100 bytes at +100 into a page.
  unsigned char* u = pageable("U", 2 * MiB, 2 * page);
  if (reg(u + 100, 100, 0) == CUDA_SUCCESS) {
    examine(u + 100, 50);
    for (size_t off : {0, 50, 99, 200, 201, 4095, 4096}) {
      attr(a_memory_type, u + off);
      attr(a_range_start, u + off);
      attr(a_range_size, u + off);
      get_flags(u + off);
    }
    dev_ptr(u, 0);
    dev_ptr(u + 250, 0);
    round_trip(u + 100, 100, false);
    round_trip(u + 100, 100, true);
  }
  // Not page aligned and more than a page: 1 MiB + 1 at +100.
  unsigned char* v = pageable("V", 2 * MiB, 2 * MiB);
  if (reg(v + 100, MiB + 1, 0) == CUDA_SUCCESS) {
    for (size_t off : {size_t(0), size_t(100), MiB + 100, MiB + 101, MiB + page - 1, MiB + page}) {
      attr(a_memory_type, v + off);
      attr(a_range_start, v + off);
      attr(a_range_size, v + off);
    }
    round_trip(v + 100, MiB + 1, false);
  }

  line("== cuMemHostRegister flags");
  const unsigned good[] = {portable, devicemap, portable | devicemap};
  int k = 0;
  for (unsigned f : good) {
    unsigned char* q = pageable(fmt("F%d", k++), page, 64 * KiB);
    if (reg(q, 64 * KiB, f) == CUDA_SUCCESS) {
      get_flags(q);
      get_flags(q + 100);
      dev_ptr(q, 0);
      attr(a_context, q);
      attr(a_access_flags, q);
      round_trip(q, 64 * KiB, false);
      unreg(q);
    }
  }
  {
    unsigned char* q = pageable("IO", page, 64 * KiB);
    if (reg(q, 64 * KiB, iomemory, " ordinary memory") == CUDA_SUCCESS) {
      get_flags(q);
      attr(a_memory_type, q);
      unreg(q);
    }
  }
  {
    unsigned char* q = pageable("RO", page, 64 * KiB);
    if (reg(q, 64 * KiB, read_only) == CUDA_SUCCESS) {
      get_flags(q);
      dev_ptr(q, 0);
      attr(a_memory_type, q);
      attr(a_access_flags, q);
      // The GPU reads it; no copy writes into it (a write through a read-only mapping faults).
      const unsigned seed = ++m_seed;
      fill(q, 64 * KiB, seed);
      line("cuMemcpyHtoD(dev, RO, 65536) -> " + res(cuMemcpyHtoD(m_dev, q, 64 * KiB)));
      std::vector<unsigned char> back(64 * KiB);
      const CUresult r = cuMemcpyDtoH(back.data(), m_dev, 64 * KiB);
      line(fmt("  device now holds RO's bytes: %s", r != CUDA_SUCCESS ? res(r).c_str()
                                                    : holds(back.data(), 64 * KiB, seed) ? "yes"
                                                                                         : "no"));
      unreg(q);
    }
    if (reg(q, 64 * KiB, read_only | portable | devicemap) == CUDA_SUCCESS) unreg(q);
  }
  {
    unsigned char* q = pageable("X", page, 64 * KiB);
    for (unsigned f : {0x10u, 0x20u, 0x100u, 0xFu, 0x80000000u, 0xFFFFFFFFu})
      if (reg(q, 64 * KiB, f) == CUDA_SUCCESS) unreg(q);
    reg(q, 0, 0, " size 0");
    reg(nullptr, 4096, 0);
    reg(nullptr, 0, 0);
    // The stack.
    alignas(4096) unsigned char stack[2 * 4096];
    m_blocks.push_back({"stack", (uintptr_t)stack, sizeof stack});
    if (reg(stack, 4096, 0) == CUDA_SUCCESS) unreg(stack);
    m_blocks.pop_back();
  }
  // Registered memory kept for later sections: flags 0 and PORTABLE.
  m_r0 = pageable("Rkeep0", page, 64 * KiB);
  reg(m_r0, 64 * KiB, 0);
  m_r1 = pageable("Rkeep1", page, 64 * KiB);
  reg(m_r1, 64 * KiB, portable);

  // Pageable memory never registered, and the stack.
  unsigned char* e = pageable("E", page, 64 * KiB);
  examine(e, 100, false);
  // The blocks of this section that stay registered for the unregister section.
  m_a = a;
  m_b = b;
  m_c = c;
  m_u = u;
  m_v = v;
}

void host_sequence::overlaps() {
  line("== registering twice, overlapping, adjacent");
  unsigned char* d = pageable("D", 2 * MiB, 8 * MiB);
  reg(d, MiB, 0);
  reg(d, MiB, 0, " again");
  reg(d, MiB, portable, " again, other flags");
  reg(d + 512 * KiB, MiB, 0, " overlapping the end");
  reg(d + 4096, 4096, 0, " inside");
  reg(d, 2 * MiB, 0, " holding it");
  reg(d + 100, 100, 0, " inside, unaligned");
  // Adjacent after, then before.
  if (reg(d + MiB, MiB, 0, " adjacent after") == CUDA_SUCCESS) {
    attr(a_range_start, d + MiB - 1);
    attr(a_range_size, d + MiB - 1);
    attr(a_range_start, d + MiB);
    attr(a_range_size, d + MiB);
    attr(a_buffer_id, d);
    attr(a_buffer_id, d + MiB);
  }
  reg(d + 4 * MiB, MiB, 0);
  if (reg(d + 3 * MiB, MiB, 0, " adjacent before") == CUDA_SUCCESS) {
    attr(a_range_start, d + 4 * MiB - 1);
    attr(a_range_start, d + 4 * MiB);
  }
  reg(d + 3 * MiB - 4096, 3 * MiB, 0, " holding two");
  // Unaligned ends: ranges that share a page with a registered one.
  reg(d + 6 * MiB, MiB + 1, 0);
  reg(d + 7 * MiB + 1, 4096, 0, " starting right after its end, in its last page");
  reg(d + 7 * MiB + 4096, 4096, 0, " the page after its last");
  reg(d + 6 * MiB - 100, 100, 0, " ending right at its start, in the page before");
  reg(d + 6 * MiB - 4096 + 100, 100, 0, " in the same page as the last one, apart from it");
  attr(a_range_start, d + 6 * MiB - 50);
  attr(a_range_size, d + 6 * MiB - 50);
  attr(a_range_start, d + 7 * MiB + 1);
  attr(a_range_size, d + 7 * MiB + 1);
  attr(a_range_start, d + 7 * MiB + 4096);

  // Pinned memory from cuMemHostAlloc.
  unsigned char* p = pinned("PH", 64 * KiB, 0);
  if (p) {
    reg(p, 64 * KiB, 0, " cuMemHostAlloc memory");
    reg(p + 4096, 4096, 0, " inside cuMemHostAlloc memory");
    unreg(p, " cuMemHostAlloc memory");
    unreg(p + 4096, " inside cuMemHostAlloc memory");
    get_flags(p, " after the unregister");
    free_host(p);
  }

  line("== unregister and free");
  unreg(d + 4096, " inside");
  unreg(d + MiB - 4096, " its last page");
  unreg(d);
  unreg(d, " again");
  attr(a_memory_type, d, " after unregister");
  get_flags(d, " after unregister");
  unreg(d + MiB);
  unreg(d + 3 * MiB);
  unreg(d + 4 * MiB);
  unreg(d + 7 * MiB + 4096);
  unreg(d + 7 * MiB + 1);
  unreg(d + 6 * MiB - 100);
  unreg(d + 6 * MiB - 4096 + 100);
  unreg(d + 6 * MiB);
  unsigned char* e = pageable("E2", page, 64 * KiB);
  unreg(e, " never registered");
  unreg(nullptr);
  free_host(m_b, " registered");
  get_flags(m_b, " after cuMemFreeHost");
  free_host(m_b + 4096, " registered, inside");
  unreg(m_b);
  unreg(m_a);
  unreg(m_c + 100, " inside");
  unreg(m_c);
  unreg(m_c, " again");
  unreg(m_u, " page start before the range");
  unreg(m_u + 150, " inside");
  unreg(m_u + 100);
  attr(a_memory_type, m_u + 100, " after unregister");
  unreg(m_v + 100);
}

void host_sequence::copies() {
  line("== copies with registered memory");
  unsigned char* r = pageable("R", 2 * MiB, 4 * MiB);
  reg(r, 4 * MiB, 0);
  round_trip(r, 4 * MiB, false);
  round_trip(r, 4 * MiB, true);
  round_trip(r + 100, MiB, false);
  round_trip(r + 100, MiB, true);
  if (m_p0) {
    round_trip(m_p0, 64 * KiB, true);
  }
  // Partly registered: the host range runs past the end of the registered one, or starts
  // before it.
  unsigned char* q = pageable("Q", 2 * MiB, 8 * MiB);
  reg(q, MiB, 0);
  reg(q + 3 * MiB, MiB, 0);
  round_trip(q, 2 * MiB, false, " past the end");
  round_trip(q + 512 * KiB, MiB, false, " across the end");
  round_trip(q + 512 * KiB, MiB, true, " across the end");
  round_trip(q + 2 * MiB, 2 * MiB, false, " starting before");
  round_trip(q + 2 * MiB, 2 * MiB, true, " starting before");
  round_trip(q + MiB, MiB, false, " not registered");
  round_trip(q, 4 * MiB, false, " two ranges and a gap");
  round_trip(q, 4 * MiB, true, " two ranges and a gap");
  unreg(q);
  unreg(q + 3 * MiB);
  // After unregistering.
  unreg(r);
  round_trip(r, 4 * MiB, false, " after unregister");
  round_trip(r, 4 * MiB, true, " after unregister");
}

// H exists but is not current (cuCtxSetCurrent(NULL)).
void host_sequence::none_current() {
  line("== H alive, no context current");
  line("cuCtxSetCurrent(NULL) -> " + res(cuCtxSetCurrent(nullptr)));
  const std::string none = " none current";
  unsigned char* q = pinned("PN", 64 * KiB, 0, none);
  {
    void* h = nullptr;
    const CUresult r = cuMemAllocHost(&h, 64 * KiB);
    line("cuMemAllocHost(size=65536)" + none + " -> " + res(r));
    if (r == CUDA_SUCCESS) cuMemFreeHost(h);
  }
  unsigned char* rq = pageable("RN", page, 64 * KiB);
  const CUresult rr = reg(rq, 64 * KiB, 0, none);
  if (m_p0) {
    get_flags(m_p0, none);
    dev_ptr(m_p0, 0, none);
    attr(a_context, m_p0, none);
    attr(a_memory_type, m_p0, none);
    line("cuMemcpyHtoD(dev, Pkeep0, 65536)" + none + " -> " +
         res(cuMemcpyHtoD(m_dev, m_p0, 64 * KiB)));
  }
  get_flags(m_r0, none);
  attr(a_context, m_r0, none);
  unreg(m_r0, none);
  if (q) {
    get_flags(q, none);
    attr(a_context, q, none);
  }
  if (rr == CUDA_SUCCESS) attr(a_context, rq, none);
  line("cuCtxSetCurrent(H) -> " + res(cuCtxSetCurrent(m_h)));
  if (q) {
    attr(a_context, q, " from H");
    free_host(q, " from H");
  }
  if (rr == CUDA_SUCCESS) {
    attr(a_context, rq, " from H");
    unreg(rq, " from H");
  }
  // Rkeep0 again, for the sections after (whatever the unregister above did).
  reg(m_r0, 64 * KiB, 0);
}

void host_sequence::second_context() {
  line("== a second context");
  CUcontext h2 = nullptr;
  line("cuCtxCreate H2 -> " + res(ctx_create(&h2, 0, 0)));
  m_ctx.push_back({"H2", h2});
  CUdeviceptr dev2 = 0;
  line("cuMemAlloc(dev2, 64 KiB) in H2 -> " + res(cuMemAlloc(&dev2, 64 * KiB)));
  for (unsigned char* p : {m_p0, m_p1, m_r0, m_r1}) {
    if (!p) continue;
    get_flags(p, " from H2");
    dev_ptr(p, 0, " from H2");
    attr(a_context, p, " from H2");
    attr(a_memory_type, p, " from H2");
    const unsigned seed = ++m_seed;
    fill(p, 64 * KiB, seed);
    const CUresult r = cuMemcpyHtoD(dev2, p, 64 * KiB);
    line(fmt("cuMemcpyHtoD(dev2, %s, 65536) from H2 -> %s", name(p).c_str(), res(r).c_str()));
    std::memset(p, 0, 64 * KiB);
    const CUresult r2 = cuMemcpyDtoH(p, dev2, 64 * KiB);
    line(fmt("cuMemcpyDtoH(%s, dev2, 65536) from H2 -> %s bytes %s", name(p).c_str(),
             res(r2).c_str(), holds(p, 64 * KiB, seed) ? "ok" : "differ"));
  }
  // Registered and pinned in H2, used from H.
  unsigned char* r2 = pageable("R2", page, 64 * KiB);
  reg(r2, 64 * KiB, 0, " in H2");
  unsigned char* p2 = pinned("P2", 64 * KiB, 0, " in H2");
  reg(m_r0, 64 * KiB, 0, " in H2, registered in H");
  unreg(m_r0, " in H2, registered in H");
  reg(m_r0, 64 * KiB, 0, " again in H2");
  attr(a_context, m_r0, " in H2");
  line("cuCtxSetCurrent(H) -> " + res(cuCtxSetCurrent(m_h)));
  attr(a_context, r2, " from H");
  if (p2) attr(a_context, p2, " from H");
  round_trip(r2, 64 * KiB, false, " from H");
  if (p2) round_trip(p2, 64 * KiB, false, " from H");
  unreg(r2, " from H");
  if (p2) free_host(p2, " from H");
  line("cuMemFree(dev2) -> " + res(cuMemFree(dev2)));
  line("cuCtxDestroy(H2) -> " + res(cuCtxDestroy(h2)));
  CUcontext c = nullptr;
  const CUresult r = cuCtxGetCurrent(&c);
  line(fmt("cuCtxGetCurrent -> %s ctx=%s", res(r).c_str(), ctx_name(c).c_str()));
  get_flags(m_r0, " registered again in H2, after cuCtxDestroy(H2)");
  attr(a_memory_type, m_r0, " after cuCtxDestroy(H2)");
  line("cuCtxSetCurrent(H) -> " + res(cuCtxSetCurrent(m_h)));
}

void host_sequence::destroyed_context() {
  line("== memory of a destroyed context");
  CUcontext d = nullptr;
  line("cuCtxCreate G -> " + res(ctx_create(&d, 0, 0)));
  m_ctx.push_back({"G", d});
  unsigned char* pd = pinned("PG", 64 * KiB, 0, " in G");
  unsigned char* pdp = pinned("PGp", 64 * KiB, portable | devicemap, " in G");
  unsigned char* rd = pageable("RG", page, 64 * KiB);
  reg(rd, 64 * KiB, 0, " in G");
  unsigned char* rdp = pageable("RGp", page, 64 * KiB);
  reg(rdp, 64 * KiB, portable, " in G");
  struct kept {
    unsigned char* p;
    unsigned seed;
  };
  std::vector<kept> all;
  for (unsigned char* p : {pd, pdp, rd, rdp}) {
    if (!p) continue;
    all.push_back({p, ++m_seed});
    fill(p, 64 * KiB, all.back().seed);
  }
  line("cuCtxDestroy(G) -> " + res(cuCtxDestroy(d)));
  CUcontext c = nullptr;
  CUresult r = cuCtxGetCurrent(&c);
  line(fmt("cuCtxGetCurrent -> %s ctx=%s", res(r).c_str(), ctx_name(c).c_str()));
  line("cuCtxSetCurrent(H) -> " + res(cuCtxSetCurrent(m_h)));
  for (const kept& k : all) {
    get_flags(k.p, " after cuCtxDestroy(G)");
    dev_ptr(k.p, 0, " after cuCtxDestroy(G)");
    attr(a_memory_type, k.p, " after cuCtxDestroy(G)");
    attr(a_context, k.p, " after cuCtxDestroy(G)");
    attr(a_range_size, k.p, " after cuCtxDestroy(G)");
    if (cpu_access(k.p, 4096, k.seed, " after cuCtxDestroy(G)"))
      round_trip(k.p, 64 * KiB, false, " after cuCtxDestroy(G)");
  }
  reg(rd, 64 * KiB, 0, " again after cuCtxDestroy(G)");
  unreg(rd, " after cuCtxDestroy(G)");
  unreg(rdp, " after cuCtxDestroy(G)");
  if (pd) free_host(pd, " after cuCtxDestroy(G)");
  if (pdp) free_host(pdp, " after cuCtxDestroy(G)");
}

void host_sequence::destroy_last() {
  line("== destroying the last context");
  // Everything of H's freed or unregistered but one block of each kind.
  if (m_p0) free_host(m_p0);
  unreg(m_r0);
  m_keep_p = m_p1;
  m_keep_r = m_r1;
  const unsigned sp = ++m_seed, sr = ++m_seed;
  if (m_keep_p) fill(m_keep_p, 64 * KiB, sp);
  fill(m_keep_r, 64 * KiB, sr);
  line("cuMemFree(dev) -> " + res(cuMemFree(m_dev)));
  line("cuStreamDestroy -> " + res(cuStreamDestroy(m_stream)));
  line("cuCtxDestroy(H) -> " + res(cuCtxDestroy(m_h)));
  CUcontext c = (CUcontext)(uintptr_t)1;
  CUresult r = cuCtxGetCurrent(&c);
  line(fmt("cuCtxGetCurrent -> %s ctx=%s", res(r).c_str(), ctx_name(c).c_str()));
  for (auto [p, seed] : {std::pair{m_keep_p, sp}, std::pair{m_keep_r, sr}}) {
    if (!p) continue;
    get_flags(p, " after cuCtxDestroy(H)");
    dev_ptr(p, 0, " after cuCtxDestroy(H)");
    attr(a_memory_type, p, " after cuCtxDestroy(H)");
    attr(a_context, p, " after cuCtxDestroy(H)");
    cpu_access(p, 4096, seed, " after cuCtxDestroy(H)");
  }
  const std::string stale = " after cuCtxDestroy(H), H still current";
  if (m_keep_p) free_host(m_keep_p, stale);
  unreg(m_keep_r, stale);
  unsigned char* rn = pageable("RNend", page, 64 * KiB);
  {
    void* q = nullptr;
    line("cuMemHostAlloc(size=65536, flags=0x0)" + stale + " -> " +
         res(cuMemHostAlloc(&q, 64 * KiB, 0)));
    line("cuMemAllocHost(size=65536)" + stale + " -> " + res(cuMemAllocHost(&q, 64 * KiB)));
    reg(rn, 64 * KiB, 0, stale);
  }
  // The same with no context current at all.
  line("cuCtxSetCurrent(NULL) -> " + res(cuCtxSetCurrent(nullptr)));
  r = cuCtxGetCurrent(&c);
  line(fmt("cuCtxGetCurrent -> %s ctx=%s", res(r).c_str(), ctx_name(c).c_str()));
  const std::string none = " after cuCtxDestroy(H), no context";
  if (m_keep_p) {
    get_flags(m_keep_p, none);
    free_host(m_keep_p, none);
  }
  get_flags(m_keep_r, none);
  unreg(m_keep_r, none);
  unsigned char* n = pinned("Nend", 64 * KiB, 0, none);
  if (n) {
    attr(a_context, n, none);
    free_host(n, none);
  }
  if (reg(rn, 64 * KiB, 0, none) == CUDA_SUCCESS) {
    attr(a_context, rn, none);
    unreg(rn, none);
  }
  // A new context: whether H's registration and pinned block are gone for good.
  CUcontext k = nullptr;
  line("cuCtxCreate K -> " + res(ctx_create(&k, 0, 0)));
  m_ctx.push_back({"K", k});
  get_flags(m_keep_r, " in K");
  attr(a_memory_type, m_keep_r, " in K");
  unreg(m_keep_r, " in K");
  if (m_keep_p) {
    get_flags(m_keep_p, " in K");
    free_host(m_keep_p, " in K");
  }
  if (reg(m_keep_r, 64 * KiB, 0, " in K") == CUDA_SUCCESS) unreg(m_keep_r, " in K");
  unsigned char* pk = pinned("PK", 64 * KiB, 0, " in K");
  if (pk) free_host(pk, " in K");
  line("cuCtxDestroy(K) -> " + res(cuCtxDestroy(k)));
}

void host_sequence::run() {
  before_init();
  no_context();
  device_attributes();
  host_alloc();
  host_register();
  overlaps();
  copies();
  none_current();
  second_context();
  destroyed_context();
  destroy_last();
  line("== end");
}

}  // namespace

void run_host(const sink& out) {
  host_sequence s(out);
  s.run();
}

}  // namespace cuda_probe
