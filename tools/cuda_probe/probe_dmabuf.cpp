// The probe's dma-buf and CUDA IPC sequences.
//
// `probe --dmabuf`: the CUDA side of dma-buf export, the upstream Linux path that replaces
// nv-p2p (GPUDirect RDMA guide 13.3): cuMemGetHandleForAddressRange(DMA_BUF_FD) before cuInit
// and without a context, the device attributes that announce it, every range a program asks for
// (whole allocations, sub-ranges aligned and not, size 0, past the end, across two allocations,
// freed, host and pageable memory, VMM memory mapped and unmapped), every bad argument, and what
// the file descriptor it returns is (its size, its link and fdinfo, whether two exports of one
// range share a file); what freeing an exported allocation, unmapping or releasing exported VMM
// memory and destroying the context do to the descriptor and to the device's free memory.
//
// `probe --ipc`: cuIpcGetMemHandle / cuIpcOpenMemHandle / cuIpcCloseMemHandle between two
// processes. The program forks before any CUDA call; the child exports, the parent imports
// (PROBE_IPC_EXPORTER_PARENT=1 swaps them), each with cuInit and a context of its own on device
// 0. They take turns over a socketpair (the child sends its lines to the parent, which prints
// them when the child's turn ends), so the transcript is in a fixed order whichever is the
// parent; each line starts with "exporter:" or "importer:".
//
// Nothing that varies run to run is printed: device memory is named after this run's
// allocations ("A4+4096"), buffer IDs as "new" / "same as <first name that had it>", tokens as
// zero / nonzero and as equal or not to the other process's, descriptors as valid / not and
// their dma-buf size against the range asked for. File descriptor numbers, inode numbers, exact
// free-memory deltas and IPC handle bytes go on '#' lines, which the comparison leaves out.
//
// Transcripts from an H200: tests/data/cuda_probe/h200_cuda13_dmabuf.txt and
// tests/data/cuda_probe/h200_cuda13_ipc.txt. The lines below print exactly what those recorded:
// change what a sequence prints only together with a new recording.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "probe.h"

namespace cuda_probe {

namespace {

constexpr size_t page = 4096;

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
  a_allowed_handle_types = 14,
  a_gdr = 15,
  a_access_flags = 16,
};

const char* attr_name(int a) {
  switch (a) {
    case a_context:
      return "CONTEXT";
    case a_memory_type:
      return "MEMORY_TYPE";
    case a_device_pointer:
      return "DEVICE_POINTER";
    case a_host_pointer:
      return "HOST_POINTER";
    case a_p2p_tokens:
      return "P2P_TOKENS";
    case a_sync_memops:
      return "SYNC_MEMOPS";
    case a_buffer_id:
      return "BUFFER_ID";
    case a_is_managed:
      return "IS_MANAGED";
    case a_device_ordinal:
      return "DEVICE_ORDINAL";
    case a_legacy_ipc:
      return "IS_LEGACY_CUDA_IPC_CAPABLE";
    case a_range_start:
      return "RANGE_START_ADDR";
    case a_range_size:
      return "RANGE_SIZE";
    case a_mapped:
      return "MAPPED";
    case a_allowed_handle_types:
      return "ALLOWED_HANDLE_TYPES";
    case a_gdr:
      return "IS_GPU_DIRECT_RDMA_CAPABLE";
    case a_access_flags:
      return "ACCESS_FLAGS";
  }
  return "?";
}

// CUmemRangeHandleType and CUmemRangeFlags (cuda.h).
constexpr int dma_buf_fd = 1;
constexpr unsigned long long mapping_type_pcie = 1;

const char* errno_name(int e) {
  switch (e) {
    case EPERM:
      return "EPERM";
    case ENOENT:
      return "ENOENT";
    case EBADF:
      return "EBADF";
    case EAGAIN:
      return "EAGAIN";
    case ENOMEM:
      return "ENOMEM";
    case EACCES:
      return "EACCES";
    case EFAULT:
      return "EFAULT";
    case EBUSY:
      return "EBUSY";
    case ENODEV:
      return "ENODEV";
    case EINVAL:
      return "EINVAL";
    case ESPIPE:
      return "ESPIPE";
    case ENXIO:
      return "ENXIO";
    case EOPNOTSUPP:
      return "EOPNOTSUPP";
    case ENOSYS:
      return "ENOSYS";
    case ENOTTY:
      return "ENOTTY";
    case 524:  // the kernel's ENOTSUPP, which a dma-buf's mmap returns to user space as is
      return "ENOTSUPP(524)";
  }
  static thread_local char buf[32];
  std::snprintf(buf, sizeof buf, "errno %d", e);
  return buf;
}

std::string size_name(size_t n) {
  if (n && n % MiB == 0) return fmt("%zuMiB", n / MiB);
  if (n && n % KiB == 0) return fmt("%zuKiB", n / KiB);
  return fmt("%zu", n);
}

// The same byte pattern the host sequence uses, per seed.
void fill(void* p, size_t n, unsigned seed) {
  auto* b = static_cast<unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) b[i] = (unsigned char)(i * 7 + seed * 13 + (i >> 12));
}
bool holds(const void* p, size_t n, unsigned seed) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i)
    if (b[i] != (unsigned char)(i * 7 + seed * 13 + (i >> 12))) return false;
  return true;
}

// A stretch of device VA this run named: a cuMemAlloc allocation, a reservation, an imported
// pointer.
struct named {
  std::string name;
  CUdeviceptr base;
  size_t size;
  bool live = true;
};

// What the three sequences share: naming VAs, contexts and buffer IDs, pointer attributes.
class namer {
 protected:
  explicit namer(const sink& out) : m_out(out) {}

  void line(const std::string& s) { m_out(s); }
  static std::string res(CUresult r) { return result_name(r); }

  // "X" or "X+off" (latest live name whose [base, base + size] holds p, else the latest dead
  // one), "null", else "other".
  std::string name(CUdeviceptr p) const {
    if (p == 0) return "null";
    // Inside a live one, inside a dead one, one past the end of a live one, of a dead one.
    for (int pass = 0; pass < 4; ++pass)
      for (size_t k = m_named.size(); k-- > 0;) {
        const named& b = m_named[k];
        if ((pass % 2 == 0) != b.live) continue;
        if (p >= b.base && (pass < 2 ? p - b.base < b.size : p - b.base == b.size))
          return p == b.base ? b.name
                             : fmt("%s+%llu", b.name.c_str(), (unsigned long long)(p - b.base));
      }
    return "other";
  }
  // The live name strictly holding p, if any ("" if none).
  std::string inside(CUdeviceptr p) const {
    for (size_t k = m_named.size(); k-- > 0;) {
      const named& b = m_named[k];
      if (b.live && p >= b.base && p - b.base < b.size)
        return p == b.base ? b.name
                           : fmt("%s+%llu", b.name.c_str(), (unsigned long long)(p - b.base));
    }
    return "";
  }
  named* find(const std::string& n) {
    for (size_t k = m_named.size(); k-- > 0;)
      if (m_named[k].name == n) return &m_named[k];
    return nullptr;
  }
  CUdeviceptr at(const std::string& n) {
    named* b = find(n);
    return b ? b->base : 0;
  }
  void add(const std::string& n, CUdeviceptr base, size_t size) {
    m_named.push_back({n, base, size, true});
  }
  std::string ctx_name(CUcontext c) const {
    if (!c) return "null";
    for (const auto& [n, h] : m_ctx)
      if (h == c) return n;
    return "other";
  }
  // The largest power of two dividing a VA, capped at 2 MiB (the big page).
  static std::string align(CUdeviceptr p) {
    if (p == 0) return "-";
    uint64_t a = 1;
    while (a < 2 * MiB && p % (a * 2) == 0) a *= 2;
    if (a >= 2 * MiB) return "2MiB+";
    if (a >= MiB) return fmt("%lluMiB", (unsigned long long)(a / MiB));
    if (a >= KiB) return fmt("%lluKiB", (unsigned long long)(a / KiB));
    return fmt("%llu", (unsigned long long)a);
  }
  std::string buffer_id(unsigned long long id, const std::string& who) {
    if (id == 0) return "0";
    auto it = m_ids.find(id);
    if (it != m_ids.end()) return "same as " + it->second;
    m_ids[id] = who;
    return "new";
  }

  // cuMemAlloc, named `n` if it succeeds; prints its alignment, offset in its 2 MiB chunk,
  // whether it reuses a freed allocation's VA, where it lies after the previous one.
  CUdeviceptr alloc(const std::string& n, size_t size, const std::string& why = "") {
    CUdeviceptr p = 0;
    const CUresult r = cuMemAlloc(&p, size);
    std::string s =
        fmt("cuMemAlloc(size=%s)%s -> %s", size_name(size).c_str(), why.c_str(), res(r).c_str());
    if (r != CUDA_SUCCESS) {
      line(s);
      return 0;
    }
    s += fmt(" %s align=%s chunk_off=0x%llx", n.c_str(), align(p).c_str(),
             (unsigned long long)(p % (2 * MiB)));
    for (const named& b : m_named)
      if (!b.live && b.base == p) s += " reuses_va_of=" + b.name;
    if (m_prev) {
      const named* prev = nullptr;
      for (const named& b : m_named)
        if (b.base == m_prev) prev = &b;
      if (prev && p == prev->base + prev->size)
        s += " at=end_of_" + prev->name;
      else if (prev && p == (prev->base + prev->size + 2 * MiB - 1) / (2 * MiB) * (2 * MiB))
        s += " at=next_2MiB_after_" + prev->name;
      else if (p / (2 * MiB) == m_prev / (2 * MiB))
        s += fmt(" delta_prev=%lld", (long long)(p - m_prev));
      else
        s += " at=other_chunk";
    }
    m_prev = p;
    add(n, p, size);
    line(s);
    return p;
  }
  CUresult free_(const std::string& n, const std::string& why = "") {
    named* b = find(n);
    const CUresult r = cuMemFree(b ? b->base : 0);
    if (r == CUDA_SUCCESS && b) b->live = false;
    line(fmt("cuMemFree(%s)%s -> %s", n.c_str(), why.c_str(), res(r).c_str()));
    return r;
  }

  // One pointer attribute, printed in a form that does not vary run to run. P2P tokens are
  // returned in `tokens` when asked.
  CUresult attr(int a, CUdeviceptr p, const std::string& why = "",
                CUDA_POINTER_ATTRIBUTE_P2P_TOKENS* tokens = nullptr,
                unsigned long long* id_out = nullptr) {
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
    std::string s = fmt("cuPointerGetAttribute(%s=%d, %s)%s -> %s", attr_name(a), a,
                        name(p).c_str(), why.c_str(), res(r).c_str());
    if (r == CUDA_SUCCESS) {
      switch (a) {
        case a_context:
          s += " ctx=" + ctx_name(v.ctx);
          break;
        case a_device_pointer:
        case a_range_start:
          s += " ptr=" + (v.dp == p ? std::string("=arg") : name(v.dp));
          break;
        case a_host_pointer:
          s += " ptr=" + std::string(v.host == (void*)(uintptr_t)p ? "=arg"
                                     : v.host                      ? "other"
                                                                   : "null");
          break;
        case a_p2p_tokens:
          s += fmt(" p2pToken=%s vaSpaceToken=%s", v.tok.p2pToken ? "nonzero" : "zero",
                   v.tok.vaSpaceToken ? "nonzero" : "zero");
          if (tokens) *tokens = v.tok;
          break;
        case a_range_size:
          s += fmt(" size=%zu", v.sz);
          break;
        case a_buffer_id:
          s += " id=" + buffer_id(v.ull, name(p));
          if (id_out) *id_out = v.ull;
          break;
        case a_allowed_handle_types:
          s += fmt(" value=0x%llx", v.ull);
          break;
        default:
          s += fmt(" value=%u", v.u);
      }
    }
    line(s);
    return r;
  }

  size_t free_memory() {
    size_t f = 0, t = 0;
    cuMemGetInfo(&f, &t);
    return f;
  }
  // How the device's free memory moved, against the size an event might return or take:
  // "unchanged" (within 4 MiB), "up by <size>" / "down by <size>" (within 4 MiB), else "other";
  // the exact delta on a '#' line.
  void memory_moved(size_t before, const std::string& what, size_t size) {
    const size_t after = free_memory();
    const long long d = (long long)after - (long long)before;
    const long long tol = 4 * MiB;
    std::string c;
    if (std::llabs(d) < tol)
      c = "unchanged";
    else if (std::llabs(d - (long long)size) < tol)
      c = "up by " + size_name(size);
    else if (std::llabs(d + (long long)size) < tol)
      c = "down by " + size_name(size);
    else
      c = "other";
    line(fmt("  free memory %s: %s", what.c_str(), c.c_str()));
    line(fmt("# free memory %s: delta %lld bytes", what.c_str(), d));
  }

  const sink& m_out;
  std::vector<named> m_named;
  std::map<unsigned long long, std::string> m_ids;
  std::vector<std::pair<std::string, CUcontext>> m_ctx;
  CUdeviceptr m_prev = 0;
};

// ------------------------------------------------------------------------------------------
// probe --dmabuf

class dmabuf_sequence : namer {
 public:
  explicit dmabuf_sequence(const sink& out) : namer(out) {}
  void run();

 private:
  // cuMemGetHandleForAddressRange on [p, p + size); on success the descriptor is described
  // and closed unless `keep`. Returns the descriptor (or -1).
  int get(CUdeviceptr p, size_t size, const std::string& why = "", int type = dma_buf_fd,
          unsigned long long flags = 0, bool keep = false) {
    int fd = -77;
    const CUresult r =
        cuMemGetHandleForAddressRange(&fd, p, size, (CUmemRangeHandleType)type, flags);
    std::string t = type == dma_buf_fd ? std::string("DMA_BUF_FD") : fmt("type=%d", type);
    std::string s =
        fmt("cuMemGetHandleForAddressRange(%s, size=%s, %s, flags=0x%llx)%s -> %s", name(p).c_str(),
            size_name(size).c_str(), t.c_str(), flags, why.c_str(), res(r).c_str());
    if (r != CUDA_SUCCESS) {
      s += fd == -77 ? " handle=unwritten" : fmt(" handle=%d", fd);
      line(s);
      return -1;
    }
    line(s);
    describe(fd, size);
    if (!keep) close(fd);
    return fd;
  }

  // What the descriptor is: valid, close-on-exec, the dma-buf's size (lseek to its end), its
  // link and fdinfo, whether it can be mapped.
  void describe(int fd, size_t requested, const std::string& what = "fd") {
    const int fl = fcntl(fd, F_GETFD);
    if (fl == -1) {
      line(fmt("  %s: valid=no (%s)", what.c_str(), errno_name(errno)));
      return;
    }
    const off_t end = lseek(fd, 0, SEEK_END);
    const int e = errno;
    std::string size_s;
    if (end == (off_t)-1)
      size_s = std::string("failed ") + errno_name(e);
    else if ((size_t)end == requested)
      size_s = fmt("%s (=range)", size_name((size_t)end).c_str());
    else
      size_s = fmt("%s (range %s)", size_name((size_t)end).c_str(), size_name(requested).c_str());
    lseek(fd, 0, SEEK_SET);
    const int ofl = fcntl(fd, F_GETFL);
    line(fmt("  %s: valid=yes cloexec=%s access=%s size=%s", what.c_str(),
             (fl & FD_CLOEXEC) ? "yes" : "no",
             (ofl & O_ACCMODE) == O_RDWR     ? "rdwr"
             : (ofl & O_ACCMODE) == O_RDONLY ? "rdonly"
                                             : "wronly",
             size_s.c_str()));
    // The link: "anon_inode:dmabuf" whole, else the part before ':' ("/dmabuf:" + name).
    char link[256] = {0};
    const ssize_t n = readlink(fmt("/proc/self/fd/%d", fd).c_str(), link, sizeof link - 1);
    std::string l = n > 0 ? std::string(link, (size_t)n) : std::string("(readlink failed)");
    std::string shown = l;
    if (l.rfind("anon_inode:", 0) != 0) {
      const size_t colon = l.find(':');
      if (colon != std::string::npos) shown = l.substr(0, colon + 1);
      if (l.rfind("socket:", 0) == 0 || l.rfind("pipe:", 0) == 0) shown = l.substr(0, colon);
    }
    // fdinfo: exp_name and size for the transcript, the rest on a '#' line.
    std::string exp_name = "(none)", info_size = "(none)", info_flags = "(none)", rest;
    if (FILE* f = std::fopen(fmt("/proc/self/fdinfo/%d", fd).c_str(), "r")) {
      char buf[512];
      while (std::fgets(buf, sizeof buf, f)) {
        std::string ln(buf);
        while (!ln.empty() && (ln.back() == '\n' || ln.back() == '\r')) ln.pop_back();
        const size_t c = ln.find(':');
        if (c == std::string::npos) continue;
        std::string k = ln.substr(0, c), v = ln.substr(c + 1);
        while (!v.empty() && (v[0] == '\t' || v[0] == ' ')) v.erase(0, 1);
        if (k == "exp_name")
          exp_name = v;
        else if (k == "size")
          info_size = std::strtoull(v.c_str(), nullptr, 10) == requested
                          ? std::string("=range")
                          : size_name(std::strtoull(v.c_str(), nullptr, 10));
        else if (k == "flags")
          info_flags = v;
        else
          rest += " " + k + "=" + v;
      }
      std::fclose(f);
    }
    line(fmt("  %s: link=%s fdinfo exp_name=%s size=%s flags=%s", what.c_str(), shown.c_str(),
             exp_name.c_str(), info_size.c_str(), info_flags.c_str()));
    struct stat st {};
    fstat(fd, &st);
    line(fmt("# %s=%d link=%s ino=%llu fdinfo:%s", what.c_str(), fd, l.c_str(),
             (unsigned long long)st.st_ino, rest.c_str()));
    // Whether it can be mapped by the CPU (never touched if it can).
    void* m = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
      line(fmt("  %s: mmap=%s", what.c_str(), errno_name(errno)));
    } else {
      line(fmt("  %s: mmap=ok", what.c_str()));
      munmap(m, page);
    }
  }
  static unsigned long long ino(int fd) {
    struct stat st {};
    return fstat(fd, &st) == 0 ? (unsigned long long)st.st_ino : 0;
  }

  void dev_attr(int a, const char* n) {
    int v = -77;
    const CUresult r = cuDeviceGetAttribute(&v, (CUdevice_attribute)a, 0);
    std::string s = fmt("cuDeviceGetAttribute(%s=%d, dev 0) -> %s", n, a, res(r).c_str());
    if (r == CUDA_SUCCESS) s += fmt(" value=%d", v);
    line(s);
  }

  void before_init();
  void device_attributes();
  void whole_allocations();
  void sub_ranges();
  void past_the_end();
  void across_allocations();
  void freed_and_host();
  void bad_arguments();
  void freeing_exported();
  void vmm();
  void destroyed_context();
  void null_handle();

  CUcontext m_d = nullptr;
};

void dmabuf_sequence::before_init() {
  line("== dma-buf before cuInit");
  int fd = -77;
  const CUdeviceptr fake = 0x7f0000000000ull;
  CUresult r =
      cuMemGetHandleForAddressRange(&fd, fake, 2 * MiB, (CUmemRangeHandleType)dma_buf_fd, 0);
  line(fmt("cuMemGetHandleForAddressRange(fake, size=2MiB, DMA_BUF_FD, flags=0x0) -> %s%s",
           res(r).c_str(), fd == -77 ? " handle=unwritten" : fmt(" handle=%d", fd).c_str()));
  r = cuMemGetHandleForAddressRange(&fd, 0, 0, (CUmemRangeHandleType)dma_buf_fd, 0);
  line("cuMemGetHandleForAddressRange(null, size=0, DMA_BUF_FD, flags=0x0) -> " + res(r));
  // Which argument checks come before the initialization check.
  r = cuMemGetHandleForAddressRange(&fd, fake, 2 * MiB, (CUmemRangeHandleType)0, 0);
  line("cuMemGetHandleForAddressRange(fake, size=2MiB, type=0, flags=0x0) -> " + res(r));
  r = cuMemGetHandleForAddressRange(&fd, fake + 100, 2 * MiB, (CUmemRangeHandleType)dma_buf_fd, 0);
  line("cuMemGetHandleForAddressRange(fake+100, size=2MiB, DMA_BUF_FD, flags=0x0) -> " + res(r));
  r = cuMemGetHandleForAddressRange(&fd, fake, 100, (CUmemRangeHandleType)dma_buf_fd, 0);
  line("cuMemGetHandleForAddressRange(fake, size=100, DMA_BUF_FD, flags=0x0) -> " + res(r));
  r = cuMemGetHandleForAddressRange(&fd, fake, 2 * MiB, (CUmemRangeHandleType)dma_buf_fd, 2);
  line("cuMemGetHandleForAddressRange(fake, size=2MiB, DMA_BUF_FD, flags=0x2) -> " + res(r));
  r = cuMemGetHandleForAddressRange(&fd, fake, 2 * MiB, (CUmemRangeHandleType)dma_buf_fd, 1);
  line("cuMemGetHandleForAddressRange(fake, size=2MiB, DMA_BUF_FD, flags=0x1) -> " + res(r));
  r = cuMemGetHandleForAddressRange(nullptr, fake, 2 * MiB, (CUmemRangeHandleType)dma_buf_fd, 0);
  line("cuMemGetHandleForAddressRange(NULL, fake, size=2MiB, DMA_BUF_FD, flags=0x0) -> " + res(r));
  int v = -77;
  r = cuDeviceGetAttribute(&v, (CUdevice_attribute)124, 0);
  line("cuDeviceGetAttribute(DMA_BUF_SUPPORTED=124, dev 0) -> " + res(r));
  line("cuInit(0) -> " + res(cuInit(0)));
  line("== dma-buf without a context");
  CUcontext c = (CUcontext)(uintptr_t)1;
  r = cuCtxGetCurrent(&c);
  line(fmt("cuCtxGetCurrent -> %s ctx=%s", res(r).c_str(), ctx_name(c).c_str()));
  fd = -77;
  r = cuMemGetHandleForAddressRange(&fd, fake, 2 * MiB, (CUmemRangeHandleType)dma_buf_fd, 0);
  line(fmt("cuMemGetHandleForAddressRange(fake, size=2MiB, DMA_BUF_FD, flags=0x0) -> %s%s",
           res(r).c_str(), fd == -77 ? " handle=unwritten" : fmt(" handle=%d", fd).c_str()));
  r = cuMemGetHandleForAddressRange(&fd, 0, 2 * MiB, (CUmemRangeHandleType)dma_buf_fd, 0);
  line("cuMemGetHandleForAddressRange(null, size=2MiB, DMA_BUF_FD, flags=0x0) -> " + res(r));
  r = cuMemGetHandleForAddressRange(&fd, fake + 100, 2 * MiB, (CUmemRangeHandleType)dma_buf_fd, 0);
  line("cuMemGetHandleForAddressRange(fake+100, size=2MiB, DMA_BUF_FD, flags=0x0) -> " + res(r));
  r = cuMemGetHandleForAddressRange(&fd, fake, 2 * MiB, (CUmemRangeHandleType)dma_buf_fd, 2);
  line("cuMemGetHandleForAddressRange(fake, size=2MiB, DMA_BUF_FD, flags=0x2) -> " + res(r));
}

void dmabuf_sequence::device_attributes() {
  line("== device attributes");
  dev_attr(124, "DMA_BUF_SUPPORTED");
  dev_attr(146, "HOST_ALLOC_DMA_BUF_SUPPORTED");
  dev_attr(116, "GPU_DIRECT_RDMA_SUPPORTED");
  dev_attr(110, "GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED");
  dev_attr(117, "GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS");
  dev_attr(118, "GPU_DIRECT_RDMA_WRITES_ORDERING");
  dev_attr(98, "CAN_FLUSH_REMOTE_WRITES");
  dev_attr(102, "VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED");
  dev_attr(103, "HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED");
  dev_attr(128, "HANDLE_TYPE_FABRIC_SUPPORTED");
  dev_attr(119, "MEMPOOL_SUPPORTED_HANDLE_TYPES");
  dev_attr(125, "IPC_EVENT_SUPPORTED");
  dev_attr(41, "UNIFIED_ADDRESSING");
  dev_attr(99, "HOST_REGISTER_SUPPORTED");
  dev_attr(91, "CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM");
  dev_attr(100, "PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES");
  line("cuCtxCreate D -> " + res(ctx_create(&m_d, 0, 0)));
  m_ctx.push_back({"D", m_d});
}

void dmabuf_sequence::whole_allocations() {
  line("== whole cuMemAlloc allocations");
  const CUdeviceptr a2 = alloc("A2", 2 * MiB);
  attr(a_allowed_handle_types, a2, " before export");
  attr(a_gdr, a2, " before export");
  attr(a_legacy_ipc, a2, " before export");
  const int fd = get(a2, 2 * MiB, "", dma_buf_fd, 0, true);
  attr(a_allowed_handle_types, a2, " after export");
  attr(a_gdr, a2, " after export");
  attr(a_legacy_ipc, a2, " after export");
  attr(a_range_size, a2, " after export");
  attr(a_buffer_id, a2, " after export");
  // The same range again: another descriptor; the same dma-buf file or another?
  const int fd2 = get(a2, 2 * MiB, " again", dma_buf_fd, 0, true);
  if (fd >= 0 && fd2 >= 0)
    line(fmt("  second export: fd %s, file %s", fd2 != fd ? "differs" : "same",
             ino(fd) == ino(fd2) ? "same" : "differs"));
  if (fd >= 0) close(fd);
  if (fd2 >= 0) close(fd2);
  const CUdeviceptr a4 = alloc("A4", 4 * MiB);
  get(a4, 4 * MiB);
  const CUdeviceptr a64 = alloc("A64", 64 * MiB);
  get(a64, 64 * MiB);
  // A sub-allocated one: cuMemAlloc packs small allocations into 2 MiB chunks.
  const CUdeviceptr p0 = alloc("P0", 64 * KiB);
  const CUdeviceptr p1 = alloc("P1", 64 * KiB);
  const CUdeviceptr q = alloc("Q", 100);
  const CUdeviceptr q2 = alloc("Q2", 100);
  if (p0) get(p0, 64 * KiB);
  if (p1) get(p1, 64 * KiB);
  if (p0) get(p0, 128 * KiB, " (P0 and P1)");
  if (q) {
    get(q, 100);
    get(q, page, " (past Q's 100 bytes)");
  }
  if (q2) get(q2, page);
  if (q2) get(q2 / page * page, page, " (the page holding Q2)");
  if (p0) get(p0, 2 * MiB, " (P0's whole chunk)");
}

void dmabuf_sequence::sub_ranges() {
  line("== sub-ranges of A4 (4 MiB)");
  const CUdeviceptr a4 = at("A4");
  get(a4 + 64 * KiB, 64 * KiB);
  get(a4 + 4 * KiB, 4 * KiB);
  get(a4 + 4 * KiB, 64 * KiB);
  get(a4 + 2 * MiB, 2 * MiB, " (second half)");
  get(a4 + 2 * MiB - 4 * KiB, 8 * KiB, " (across its 2 MiB pages)");
  get(a4, 2 * MiB + 4 * KiB);
  get(a4 + 4 * MiB - 4 * KiB, 4 * KiB, " (last page)");
  line("-- start not page aligned");
  get(a4 + 100, page);
  get(a4 + 512, page);
  get(a4 + 2048, page);
  get(a4 + 100, page - 100);
  line("-- size not page aligned");
  get(a4, page + 1);
  get(a4, 100);
  get(a4, page - 1);
  get(a4, 2 * MiB - 1);
  get(a4, 1);
  line("-- size 0");
  get(a4, 0);
  get(at("A2"), 0);
}

void dmabuf_sequence::past_the_end() {
  line("== ranges past an allocation's end");
  const CUdeviceptr a2 = at("A2"), a4 = at("A4"), a64 = at("A64");
  get(a2, 4 * MiB);
  get(a2, 2 * MiB + page);
  get(a2 + 2 * MiB - page, 2 * page);
  get(a2 + 2 * MiB, page, " (one past the end)");
  get(a4, 8 * MiB);
  get(a64, 64 * MiB + page);
  get(a64 + 64 * MiB - page, page);
  get(a64, 128 * MiB);
  get(a64, ~(size_t)0 & ~(page - 1), " (huge size)");
  get(a64 + 32 * MiB, (size_t)1 << 40, " (1 TiB)");
}

void dmabuf_sequence::across_allocations() {
  line("== ranges across two allocations");
  const CUdeviceptr s0 = alloc("S0", 2 * MiB);
  const CUdeviceptr s1 = alloc("S1", 2 * MiB);
  if (!s0 || !s1) return;
  line(fmt("  S1 %s", s1 == s0 + 2 * MiB   ? "follows S0 directly"
                      : s0 == s1 + 2 * MiB ? "lies directly below S0"
                                           : "is not adjacent to S0"));
  get(s0, 4 * MiB);
  get(s0 + 2 * MiB - page, 2 * page);
  get(s1, 2 * MiB);
  const CUdeviceptr t0 = alloc("T0", 4 * MiB);
  const CUdeviceptr t1 = alloc("T1", 2 * MiB);
  if (t0 && t1 && t1 == t0 + 4 * MiB) get(t0 + 2 * MiB, 4 * MiB, " (T0's second half and T1)");
  if (t0 && t1 && t1 != t0 + 4 * MiB) line("  T1 is not adjacent to T0");
}

void dmabuf_sequence::freed_and_host() {
  line("== freed memory, host memory, pageable memory");
  const CUdeviceptr f = alloc("F", 2 * MiB);
  free_("F");
  get(f, 2 * MiB, " (freed)");
  get(f + 64 * KiB, 64 * KiB, " (freed)");
  // Pinned host memory: cuMemHostAlloc, cuMemAllocHost, and the device pointer of a mapped one.
  void* h = nullptr;
  CUresult r = cuMemHostAlloc(&h, 64 * KiB, 0);
  line(fmt("cuMemHostAlloc(size=64KiB, flags=0x0) -> %s H align=%s", res(r).c_str(),
           h && (uintptr_t)h % page == 0 ? "page" : "below_page"));
  if (r == CUDA_SUCCESS) {
    add("H", (CUdeviceptr)(uintptr_t)h, 64 * KiB);
    get((CUdeviceptr)(uintptr_t)h, 64 * KiB);
    get((CUdeviceptr)(uintptr_t)h, 64 * KiB, "", dma_buf_fd, mapping_type_pcie);
    get((CUdeviceptr)(uintptr_t)h + page, page);
    attr(a_allowed_handle_types, (CUdeviceptr)(uintptr_t)h);
  }
  void* hm = nullptr;
  r = cuMemHostAlloc(&hm, 64 * KiB, 0x2 /* DEVICEMAP */);
  line("cuMemHostAlloc(size=64KiB, flags=0x2) -> " + res(r) + " HM");
  if (r == CUDA_SUCCESS) {
    add("HM", (CUdeviceptr)(uintptr_t)hm, 64 * KiB);
    CUdeviceptr d = 0;
    r = cuMemHostGetDevicePointer(&d, hm, 0);
    line(fmt("cuMemHostGetDevicePointer(HM) -> %s dptr=%s", res(r).c_str(),
             d == (CUdeviceptr)(uintptr_t)hm ? "=host" : "other"));
    if (r == CUDA_SUCCESS) get(d, 64 * KiB, " (HM's device pointer)");
  }
  void* ha = nullptr;
  r = cuMemAllocHost(&ha, 64 * KiB);
  line("cuMemAllocHost(size=64KiB) -> " + res(r) + " HA");
  if (r == CUDA_SUCCESS) {
    add("HA", (CUdeviceptr)(uintptr_t)ha, 64 * KiB);
    get((CUdeviceptr)(uintptr_t)ha, 64 * KiB);
  }
  // Pageable memory, then the same memory registered with cuMemHostRegister.
  void* pg = nullptr;
  if (posix_memalign(&pg, page, 64 * KiB) == 0) {
    std::memset(pg, 0, 64 * KiB);
    add("U", (CUdeviceptr)(uintptr_t)pg, 64 * KiB);
    line("# U: pageable, posix_memalign(alignment=4096, size=64KiB)");
    get((CUdeviceptr)(uintptr_t)pg, 64 * KiB, " (pageable)");
    r = cuMemHostRegister(pg, 64 * KiB, 0);
    line("cuMemHostRegister(U, size=64KiB, flags=0x0) -> " + res(r));
    get((CUdeviceptr)(uintptr_t)pg, 64 * KiB, " (registered)");
    if (r == CUDA_SUCCESS) line("cuMemHostUnregister(U) -> " + res(cuMemHostUnregister(pg)));
  }
  // A stack address and an address nothing holds.
  int local = 0;
  const CUdeviceptr stack = (CUdeviceptr)(uintptr_t)&local / page * page;
  add("stack", stack, page);
  get(stack, page, " (stack)");
  get(0x7f0000000000ull, 2 * MiB, " (nothing there: fake)");
  if (h) line("cuMemFreeHost(H) -> " + res(cuMemFreeHost(h)));
  if (hm) line("cuMemFreeHost(HM) -> " + res(cuMemFreeHost(hm)));
  if (ha) line("cuMemFreeHost(HA) -> " + res(cuMemFreeHost(ha)));
}

void dmabuf_sequence::bad_arguments() {
  line("== arguments");
  const CUdeviceptr a2 = at("A2");
  get(0, 2 * MiB, " (null dptr)");
  get(0, 0, " (null dptr)");
  get(a2, 2 * MiB, "", 0);
  get(a2, 2 * MiB, "", 2);
  get(a2, 2 * MiB, "", 3);
  get(a2, 2 * MiB, "", 0x7fffffff);
  get(a2, 2 * MiB, "", -1);
  get(a2, 2 * MiB, " (MAPPING_TYPE_PCIE)", dma_buf_fd, mapping_type_pcie);
  get(a2 + 64 * KiB, 64 * KiB, " (MAPPING_TYPE_PCIE)", dma_buf_fd, mapping_type_pcie);
  get(a2, 2 * MiB, "", dma_buf_fd, 2);
  get(a2, 2 * MiB, "", dma_buf_fd, 3);
  get(a2, 2 * MiB, "", dma_buf_fd, 4);
  get(a2, 2 * MiB, "", dma_buf_fd, 6);
  get(a2, 2 * MiB, "", dma_buf_fd, 7);
  get(a2, 2 * MiB, "", dma_buf_fd, 0x100);
  get(a2, 2 * MiB, "", dma_buf_fd, 1ull << 32);
  get(a2, 0, " (null dptr check first?)", 0, 2);
  get(0, 2 * MiB, " (which check first?)", 0, 0);
  get(a2 + 100, 2 * MiB, " (which check first?)", 0, 0);
  get(a2 + 100, 2 * MiB, " (which check first?)", dma_buf_fd, 2);
  get(a2, 100, " (which check first?)", dma_buf_fd, 2);
  get(at("F"), 2 * MiB, " (which check first?)", dma_buf_fd, 2);
  // With no context current, on live memory of D.
  CUcontext popped = nullptr;
  CUresult r = cuCtxPopCurrent(&popped);
  line(fmt("cuCtxPopCurrent -> %s ctx=%s", res(r).c_str(), ctx_name(popped).c_str()));
  get(a2, 2 * MiB, " without context");
  get(a2 + 64 * KiB, 64 * KiB, " without context");
  attr(a_allowed_handle_types, a2, " without context");
  line("cuCtxPushCurrent(D) -> " + res(cuCtxPushCurrent(m_d)));
  // In a second context: memory of D.
  CUcontext e = nullptr;
  line("cuCtxCreate D2 -> " + res(ctx_create(&e, 0, 0)));
  m_ctx.push_back({"D2", e});
  get(a2, 2 * MiB, " in D2");
  line("cuCtxDestroy(D2) -> " + res(cuCtxDestroy(e)));
  line("cuCtxSetCurrent(D) -> " + res(cuCtxSetCurrent(m_d)));
}

void dmabuf_sequence::freeing_exported() {
  line("== freeing exported cuMemAlloc memory");
  // Baseline: what a free of 64 MiB does to the device's free memory without an export.
  size_t before = free_memory();
  alloc("B0", 64 * MiB);
  memory_moved(before, "after cuMemAlloc(B0)", 64 * MiB);
  before = free_memory();
  free_("B0", " (never exported)");
  memory_moved(before, "after cuMemFree(B0)", 64 * MiB);
  // Exported, then freed while the descriptor is open.
  const CUdeviceptr k = alloc("K", 64 * MiB);
  {
    std::vector<unsigned char> buf(64 * MiB);
    fill(buf.data(), buf.size(), 5);
    line("cuMemcpyHtoD(K, 64MiB) -> " + res(cuMemcpyHtoD(k, buf.data(), buf.size())));
  }
  const int fd = get(k, 64 * MiB, "", dma_buf_fd, 0, true);
  const int fd_sub = get(k + 32 * MiB, 4 * MiB, "", dma_buf_fd, 0, true);
  before = free_memory();
  free_("K", " (exported, descriptors open)");
  memory_moved(before, "after cuMemFree(K)", 64 * MiB);
  if (fd >= 0) describe(fd, 64 * MiB, "fd of K");
  if (fd_sub >= 0) describe(fd_sub, 4 * MiB, "fd of K+32MiB");
  get(k, 64 * MiB, " (freed, still exported)");
  attr(a_memory_type, k, " (freed, still exported)");
  // A new allocation of the same size: does it take K's VA while K's dma-buf lives?
  before = free_memory();
  const CUdeviceptr k2 = alloc("K2", 64 * MiB);
  memory_moved(before, "after cuMemAlloc(K2)", 64 * MiB);
  if (k2) get(k2, 64 * MiB);
  before = free_memory();
  if (fd >= 0) line(fmt("close(fd of K) -> %d", close(fd)));
  memory_moved(before, "after close(fd of K)", 64 * MiB);
  before = free_memory();
  if (fd_sub >= 0) line(fmt("close(fd of K+32MiB) -> %d", close(fd_sub)));
  memory_moved(before, "after close(fd of K+32MiB)", 64 * MiB);
  if (k2) free_("K2");
  // Closed first, then freed.
  const CUdeviceptr j = alloc("J", 64 * MiB);
  const int fj = get(j, 64 * MiB, "", dma_buf_fd, 0, true);
  if (fj >= 0) line(fmt("close(fd of J) -> %d", close(fj)));
  before = free_memory();
  free_("J", " (export closed)");
  memory_moved(before, "after cuMemFree(J)", 64 * MiB);
  attr(a_allowed_handle_types, at("A2"), " (A2 after its exports were closed)");
}

void dmabuf_sequence::vmm() {
  line("== VMM memory (cuMemCreate, cuMemAddressReserve, cuMemMap, cuMemSetAccess)");
  auto prop_for = [](unsigned char gdr) {
    CUmemAllocationProp p;
    std::memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = 0;
    p.allocFlags.gpuDirectRDMACapable = gdr;
    return p;
  };
  const CUmemAllocationProp gdr1 = prop_for(1), gdr0 = prop_for(0);
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
  if (fd >= 0) line(fmt("close(fd of R1) -> %d", close(fd)));
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

void dmabuf_sequence::destroyed_context() {
  line("== context destroyed while an export is open");
  // Free memory is measured from before E is created: E's own memory comes back with it.
  size_t before = free_memory();
  CUcontext e = nullptr;
  line("cuCtxCreate E -> " + res(ctx_create(&e, 0, 0)));
  m_ctx.push_back({"E", e});
  const CUdeviceptr x = alloc("X", 64 * MiB);
  const int fd = x ? get(x, 64 * MiB, "", dma_buf_fd, 0, true) : -1;
  line("cuCtxDestroy(E) -> " + res(cuCtxDestroy(e)));
  line("cuCtxSetCurrent(D) -> " + res(cuCtxSetCurrent(m_d)));
  memory_moved(before, "after cuCtxDestroy(E), against before cuCtxCreate(E)", 64 * MiB);
  if (fd >= 0) describe(fd, 64 * MiB, "fd of X");
  before = free_memory();
  if (fd >= 0) line(fmt("close(fd of X) -> %d", close(fd)));
  memory_moved(before, "after close(fd of X)", 64 * MiB);
}

void dmabuf_sequence::null_handle() {
  // Last: a driver that wrote through NULL would end the program here.
  line("== NULL handle pointer");
  const CUdeviceptr a2 = at("A2");
  line("cuMemGetHandleForAddressRange(NULL, A2, size=2MiB, DMA_BUF_FD, flags=0x0) -> " +
       res(cuMemGetHandleForAddressRange(nullptr, a2, 2 * MiB, (CUmemRangeHandleType)dma_buf_fd,
                                         0)));
  line("cuMemGetHandleForAddressRange(NULL, A2, size=2MiB, type=0, flags=0x0) -> " +
       res(cuMemGetHandleForAddressRange(nullptr, a2, 2 * MiB, (CUmemRangeHandleType)0, 0)));
  line("cuMemGetHandleForAddressRange(NULL, A2+100, size=2MiB, DMA_BUF_FD, flags=0x0) -> " +
       res(cuMemGetHandleForAddressRange(nullptr, a2 + 100, 2 * MiB,
                                         (CUmemRangeHandleType)dma_buf_fd, 0)));
}

void dmabuf_sequence::run() {
  before_init();
  device_attributes();
  whole_allocations();
  sub_ranges();
  past_the_end();
  across_allocations();
  freed_and_host();
  bad_arguments();
  freeing_exported();
  vmm();
  destroyed_context();
  null_handle();
  line("cuCtxDestroy(D) -> " + res(cuCtxDestroy(m_d)));
  line("== end");
}

// ------------------------------------------------------------------------------------------
// probe --ipc

// A socketpair end between the two processes: typed, framed messages. 'L' a line of the
// importer's, 'D' named bytes, 'G' your turn, 'E' end of my turn.
class channel {
 public:
  explicit channel(int fd) : m_fd(fd) {}
  bool send(char type, const std::string& payload) {
    char hdr[5];
    hdr[0] = type;
    const uint32_t n = (uint32_t)payload.size();
    std::memcpy(hdr + 1, &n, 4);
    return write_all(hdr, 5) && write_all(payload.data(), payload.size());
  }
  // 1: a message; 0: the other end closed; -1: timed out or failed.
  int recv(char& type, std::string& payload, int timeout_ms) {
    char hdr[5];
    int r = read_all(hdr, 5, timeout_ms);
    if (r != 1) return r;
    type = hdr[0];
    uint32_t n = 0;
    std::memcpy(&n, hdr + 1, 4);
    payload.assign(n, '\0');
    return n ? read_all(&payload[0], n, timeout_ms) : 1;
  }
  void send_data(const std::string& key, const void* p, size_t n) {
    send('D', key + std::string(1, '\0') + std::string(static_cast<const char*>(p), n));
  }
  static void store(const std::string& payload, std::map<std::string, std::string>& data) {
    const size_t z = payload.find('\0');
    if (z == std::string::npos) return;
    data[payload.substr(0, z)] = payload.substr(z + 1);
  }

 private:
  bool write_all(const char* p, size_t n) {
    while (n) {
      const ssize_t w = ::send(m_fd, p, n, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      p += w;
      n -= (size_t)w;
    }
    return true;
  }
  int read_all(char* p, size_t n, int timeout_ms) {
    while (n) {
      pollfd pf{m_fd, POLLIN, 0};
      const int pr = poll(&pf, 1, timeout_ms);
      if (pr < 0 && errno == EINTR) continue;
      if (pr <= 0) return -1;
      const ssize_t r = read(m_fd, p, n);
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) return 0;
      if (r < 0) return -1;
      p += r;
      n -= (size_t)r;
    }
    return 1;
  }
  int m_fd;
};

constexpr int turn_timeout_ms = 30 * 1000;

// "who: line", or "# who: rest" for a comment line.
std::string prefixed(const std::string& who, const std::string& s) {
  if (s.rfind("#", 0) == 0)
    return "# " + who + ": " + s.substr(s.size() > 1 && s[1] == ' ' ? 2 : 1);
  return who + ": " + s;
}

// This process's end of the link between the two. The parent prints every line, its own at
// once and the child's (sent as 'L' messages) while it waits for the child's turn to end; so
// the transcript is in turn order whichever of the two is the parent. 'D' messages carry named
// bytes (handles, IDs, tokens, VAs), 'T' ends the sender's turn.
class peer_link {
 public:
  peer_link(int fd, bool parent, const sink& out, std::string who, pid_t other)
      : m_ch(fd), m_parent(parent), m_out(out), m_who(std::move(who)), m_other(other) {}
  // This side's lines.
  void line(const std::string& s) {
    if (m_parent)
      m_out(prefixed(m_who, s));
    else
      m_ch.send('L', prefixed(m_who, s));
  }
  void send_data(const std::string& key, const void* p, size_t n) { m_ch.send_data(key, p, n); }
  // Waits for the other side's turn to end; false if it went away.
  bool await() {
    for (;;) {
      char t = 0;
      std::string p;
      const int r = m_ch.recv(t, p, turn_timeout_ms);
      if (r != 1) {
        if (m_parent) {
          m_out(r == 0 ? "(the other process closed the link)" : "(the other process timed out)");
          if (r != 0) kill(m_other, SIGKILL);
        }
        return false;
      }
      if (t == 'L' && m_parent) m_out(p);
      if (t == 'D') channel::store(p, data);
      if (t == 'T') return true;
    }
  }
  // Ends this side's turn and waits for the other's to end.
  bool handoff() {
    m_ch.send('T', "");
    return await();
  }
  // Ends this side's last turn; the parent then prints whatever the child still sends.
  void done() {
    m_ch.send('T', "");
    if (!m_parent) return;
    for (;;) {
      char t = 0;
      std::string p;
      if (m_ch.recv(t, p, turn_timeout_ms) != 1) return;
      if (t == 'L') m_out(p);
    }
  }
  std::map<std::string, std::string> data;

 private:
  channel m_ch;
  bool m_parent;
  const sink& m_out;
  std::string m_who;
  pid_t m_other;
};

std::string handle_bytes(const CUipcMemHandle& h) {
  return std::string(reinterpret_cast<const char*>(h.reserved), sizeof h.reserved);
}
std::string hex_bytes(const std::string& b) {
  std::string s;
  for (unsigned char c : b) s += fmt("%02x", c);
  return s;
}

// The exporter: cuMemAlloc's buffers, exports them, frees them while they are open.
class ipc_exporter : namer {
 public:
  explicit ipc_exporter(peer_link& l)
      : namer(m_sink), m_sink([&l](const std::string& s) { l.line(s); }), m_link(l) {}
  void run();

 private:
  bool turn() { return m_link.handoff(); }
  // cuIpcGetMemHandle; its bytes kept under `key` (and sent) if it succeeds.
  CUresult get(CUdeviceptr p, const std::string& key, const std::string& why = "") {
    CUipcMemHandle h;
    std::memset(&h, 0xAB, sizeof h);
    const CUresult r = cuIpcGetMemHandle(&h, p);
    std::string s =
        fmt("cuIpcGetMemHandle(%s)%s -> %s", name(p).c_str(), why.c_str(), res(r).c_str());
    if (r == CUDA_SUCCESS) {
      const std::string b = handle_bytes(h);
      std::string same;
      for (const auto& [k, v] : m_handles)
        if (v == b) same = k;
      s += " " + key + (same.empty() ? " bytes=new" : " bytes=same as " + same);
      m_handles.push_back({key, b});
      m_link.send_data(key, b.data(), b.size());
      line(s);
      line("# " + key + "=" + hex_bytes(b));
    } else {
      std::string b = handle_bytes(h);
      s += b == std::string(sizeof h.reserved, (char)0xAB) ? " handle=unwritten"
           : b == std::string(sizeof h.reserved, '\0')     ? " handle=zeroed"
                                                           : " handle=written";
      line(s);
    }
    return r;
  }
  void write_pattern(const std::string& n, size_t size, unsigned seed) {
    std::vector<unsigned char> b(size);
    fill(b.data(), size, seed);
    line(fmt("cuMemcpyHtoD(%s, %s, pattern %u) -> %s", n.c_str(), size_name(size).c_str(), seed,
             res(cuMemcpyHtoD(at(n), b.data(), size)).c_str()));
  }
  void check(const std::string& n, size_t size, std::initializer_list<unsigned> seeds) {
    std::vector<unsigned char> b(size);
    const CUresult r = cuMemcpyDtoH(b.data(), at(n), size);
    std::string what = "other";
    for (unsigned sd : seeds)
      if (holds(b.data(), size, sd)) what = fmt("pattern %u", sd);
    line(fmt("cuMemcpyDtoH(%s, %s) -> %s bytes=%s", n.c_str(), size_name(size).c_str(),
             res(r).c_str(), r == CUDA_SUCCESS ? what.c_str() : "-"));
  }
  void send_va(const std::string& n) {
    const CUdeviceptr p = at(n);
    m_link.send_data("va:" + n, &p, sizeof p);
  }

  void e0();
  void e1();
  void e2();
  void e3();

  sink m_sink;
  peer_link& m_link;
  std::vector<std::pair<std::string, std::string>> m_handles;
  CUcontext m_x = nullptr;
  size_t m_mem = 0;
};

void ipc_exporter::e0() {
  line("== exporter: before cuInit, without a context");
  CUipcMemHandle h;
  line("cuIpcGetMemHandle(null) before cuInit -> " + res(cuIpcGetMemHandle(&h, 0)));
  line("cuIpcGetMemHandle(fake) before cuInit -> " + res(cuIpcGetMemHandle(&h, 0x7f0000000000ull)));
  line("cuInit(0) -> " + res(cuInit(0)));
  line("cuIpcGetMemHandle(fake) without context -> " +
       res(cuIpcGetMemHandle(&h, 0x7f0000000000ull)));
  line("cuCtxCreate X -> " + res(ctx_create(&m_x, 0, 0)));
  m_ctx.push_back({"X", m_x});
  int v = -1;
  CUresult r = cuDeviceGetAttribute(&v, (CUdevice_attribute)125, 0);
  line(fmt("cuDeviceGetAttribute(IPC_EVENT_SUPPORTED=125) -> %s value=%d", res(r).c_str(), v));
  line("== exporter: buffers and their handles");
  alloc("A", 2 * MiB);
  alloc("B", 100);
  alloc("B2", 100);
  alloc("C", 64 * MiB);
  write_pattern("A", 2 * MiB, 1);
  write_pattern("B", 100, 2);
  write_pattern("B2", 100, 3);
  write_pattern("C", 64 * MiB, 4);
  line("cuCtxSynchronize -> " + res(cuCtxSynchronize()));
  unsigned long long id = 0;
  CUDA_POINTER_ATTRIBUTE_P2P_TOKENS tok{};
  for (const char* n : {"A", "B", "B2", "C"}) {
    if (attr(a_buffer_id, at(n), "", nullptr, &id) == CUDA_SUCCESS)
      m_link.send_data(std::string("id:") + n, &id, sizeof id);
    if (attr(a_p2p_tokens, at(n), "", &tok) == CUDA_SUCCESS)
      m_link.send_data(std::string("tok:") + n, &tok, sizeof tok);
    send_va(n);
  }
  for (int a : {a_legacy_ipc, a_allowed_handle_types, a_gdr, a_range_size}) attr(a, at("A"));
  attr(a_legacy_ipc, at("B"));
  get(at("A"), "hA");
  get(at("A"), "hA'", " again");
  get(at("B"), "hB");
  get(at("B2"), "hB2");
  get(at("C"), "hC");
  line("-- interior pointers");
  get(at("A") + 4096, "hA+4096");
  get(at("A") + 2 * MiB - 1, "hA+last");
  get(at("B") + 4, "hB+4");
  get(at("C") + 2 * MiB, "hC+2MiB");
  get(at("A") + 2 * MiB, "hA+end", " (one past the end)");
  line("-- freed, reused, host, pageable, null");
  alloc("F", 2 * MiB);
  get(at("F"), "hF", " (live)");
  free_("F");
  get(at("F"), "hF-freed", " (freed)");
  alloc("G", 2 * MiB);
  get(at("G"), "hG");
  void* hp = nullptr;
  r = cuMemHostAlloc(&hp, 64 * KiB, 0);
  line("cuMemHostAlloc(size=64KiB, flags=0x0) -> " + res(r) + " H");
  if (r == CUDA_SUCCESS) {
    add("H", (CUdeviceptr)(uintptr_t)hp, 64 * KiB);
    get((CUdeviceptr)(uintptr_t)hp, "hH", " (pinned host)");
  }
  void* pg = nullptr;
  if (posix_memalign(&pg, page, 64 * KiB) == 0) {
    add("U", (CUdeviceptr)(uintptr_t)pg, 64 * KiB);
    line("# U: pageable, posix_memalign(alignment=4096, size=64KiB)");
    get((CUdeviceptr)(uintptr_t)pg, "hU", " (pageable)");
  }
  get(0, "hnull", " (null)");
  get(0x7f0000000000ull, "hfake", " (nothing there: fake)");
  // VMM memory: not legacy IPC capable.
  {
    CUmemAllocationProp p;
    std::memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = 0;
    CUmemGenericAllocationHandle vh = 0;
    CUdeviceptr vp = 0;
    r = cuMemCreate(&vh, 2 * MiB, &p, 0);
    const CUresult rr = cuMemAddressReserve(&vp, 2 * MiB, 0, 0, 0);
    const CUresult rm = r == CUDA_SUCCESS && rr == CUDA_SUCCESS ? cuMemMap(vp, 2 * MiB, 0, vh, 0)
                                                                : CUDA_ERROR_UNKNOWN;
    CUmemAccessDesc d;
    std::memset(&d, 0, sizeof d);
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = 0;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    const CUresult ra = rm == CUDA_SUCCESS ? cuMemSetAccess(vp, 2 * MiB, &d, 1) : rm;
    line(fmt("VMM V (cuMemCreate 2MiB, reserve, map, set access) -> %s %s %s %s", res(r).c_str(),
             res(rr).c_str(), res(rm).c_str(), res(ra).c_str()));
    if (ra == CUDA_SUCCESS) {
      add("V", vp, 2 * MiB);
      attr(a_legacy_ipc, vp);
      get(vp, "hV", " (VMM)");
      cuMemUnmap(vp, 2 * MiB);
    }
    if (r == CUDA_SUCCESS) cuMemRelease(vh);
    if (rr == CUDA_SUCCESS) cuMemAddressFree(vp, 2 * MiB);
  }
}

void ipc_exporter::e1() {
  line("== exporter: what the importer wrote");
  check("A", 2 * MiB, {1, 11});
  check("B", 100, {2, 12});
  check("B2", 100, {3, 13});
  check("C", 64 * MiB, {4, 14});
  for (int a : {a_legacy_ipc, a_range_size, a_mapped}) attr(a, at("A"), " (opened by importer)");
}

void ipc_exporter::e2() {
  line("== exporter: frees A, B and C while the importer has them open");
  m_mem = free_memory();
  free_("C", " (open in importer)");
  memory_moved(m_mem, "after cuMemFree(C)", 64 * MiB);
  free_("A", " (open in importer)");
  free_("B", " (open in importer)");
  get(at("A"), "hA-freed", " (freed)");
  alloc("A'", 2 * MiB);
  alloc("C'", 64 * MiB);
  write_pattern("A'", 2 * MiB, 21);
  write_pattern("C'", 64 * MiB, 22);
  line("cuCtxSynchronize -> " + res(cuCtxSynchronize()));
  get(at("A'"), "hA'new");
  m_mem = free_memory();
}

void ipc_exporter::e3() {
  line("== exporter: after the importer wrote through and closed its stale mappings");
  memory_moved(m_mem, "since its turn (importer closed C's mapping)", 64 * MiB);
  check("A'", 2 * MiB, {21, 31});
  check("C'", 64 * MiB, {22, 32});
  line("cuCtxSynchronize -> " + res(cuCtxSynchronize()));
  line("cuIpcGetMemHandle(NULL, A') -> " + res(cuIpcGetMemHandle(nullptr, at("A'"))));
}

void ipc_exporter::run() {
  e0();
  if (!turn()) return;
  e1();
  if (!turn()) return;
  e2();
  if (!turn()) return;
  e3();
  if (!turn()) return;
  line("cuCtxDestroy(X) -> " + res(cuCtxDestroy(m_x)));
  m_link.done();
}

// The importer: opens what the exporter sends, reads and writes through it, closes it.
class ipc_importer : namer {
 public:
  explicit ipc_importer(peer_link& l)
      : namer(m_sink),
        m_sink([&l](const std::string& s) { l.line(s); }),
        m_link(l),
        m_data(l.data) {}
  void run();

 private:
  bool turn() { return m_link.handoff(); }
  bool have(const std::string& k) const { return m_data.count(k) != 0; }
  CUipcMemHandle handle(const std::string& k) const {
    CUipcMemHandle h;
    std::memset(&h, 0, sizeof h);
    auto it = m_data.find(k);
    if (it != m_data.end())
      std::memcpy(h.reserved, it->second.data(), std::min(it->second.size(), sizeof h.reserved));
    return h;
  }
  template <class T>
  T value(const std::string& k) const {
    T v{};
    auto it = m_data.find(k);
    if (it != m_data.end() && it->second.size() == sizeof v)
      std::memcpy(&v, it->second.data(), sizeof v);
    return v;
  }
  // cuIpcOpenMemHandle; a new pointer is named `as` (with its exporter's name `of`, for the
  // relations), a pointer this process already holds by that name.
  CUdeviceptr open(const std::string& k, unsigned flags, const std::string& as,
                   const std::string& of, const std::string& why = "") {
    if (!have(k)) {
      line(fmt("cuIpcOpenMemHandle(%s) -> (no such handle from the exporter)", k.c_str()));
      return 0;
    }
    return open_handle(handle(k), k, flags, as, of, why);
  }
  CUdeviceptr open_handle(const CUipcMemHandle& h, const std::string& k, unsigned flags,
                          const std::string& as, const std::string& of,
                          const std::string& why = "") {
    CUdeviceptr p = 0xABABABABull;
    const CUresult r = cuIpcOpenMemHandle(&p, h, flags);
    std::string s = fmt("cuIpcOpenMemHandle(%s, flags=0x%x)%s -> %s", k.c_str(), flags, why.c_str(),
                        res(r).c_str());
    if (r != CUDA_SUCCESS) {
      s += p == 0xABABABABull ? " ptr=unwritten" : p == 0 ? " ptr=null" : " ptr=written";
      line(s);
      return 0;
    }
    ++m_refs[p];
    const std::string known = inside(p);
    bool is_known = false;
    for (const named& b : m_named)
      if (b.live && b.base == p) is_known = true;
    if (is_known) {
      s += " ptr=" + known;
    } else {
      s += fmt(" %s align=%s chunk_off=0x%llx", as.c_str(), align(p).c_str(),
               (unsigned long long)(p % (2 * MiB)));
      if (!of.empty() && have("va:" + of)) {
        const CUdeviceptr e = value<CUdeviceptr>("va:" + of);
        s += p == e ? " va=exporter's" : " va=not exporter's";
        s += p % (2 * MiB) == e % (2 * MiB) ? " chunk_off=exporter's" : " chunk_off=not exporter's";
      }
      if (!known.empty()) s += " inside=" + known;
      for (const named& b : m_named)
        if (!b.live && b.base == p) s += " reuses_va_of=" + b.name;
      add(as, p, of.empty() || !have("size:" + of) ? 1 : value<size_t>("size:" + of));
      m_of[as] = of;
    }
    line(s);
    return p;
  }
  CUresult close_(CUdeviceptr p, const std::string& why = "") {
    const CUresult r = cuIpcCloseMemHandle(p);
    if (r == CUDA_SUCCESS && m_refs[p] > 0) --m_refs[p];
    line(fmt("cuIpcCloseMemHandle(%s)%s -> %s", name(p).c_str(), why.c_str(), res(r).c_str()));
    return r;
  }
  // Whether a pointer is still known to the driver, and (if it is) whether 4 bytes can be read.
  void still_there(CUdeviceptr p) {
    unsigned t = 0;
    const CUresult r = cuPointerGetAttribute(&t, (CUpointer_attribute)a_memory_type, p);
    std::string s = fmt("  %s: MEMORY_TYPE -> %s", name(p).c_str(), res(r).c_str());
    if (r == CUDA_SUCCESS) {
      unsigned char b[4];
      s += fmt(" value=%u; cuMemcpyDtoH 4 bytes -> %s", t, res(cuMemcpyDtoH(b, p, 4)).c_str());
    }
    line(s);
  }
  void check(const std::string& n, size_t size, std::initializer_list<unsigned> seeds,
             const std::string& why = "") {
    std::vector<unsigned char> b(size);
    const CUresult r = cuMemcpyDtoH(b.data(), at(n), size);
    std::string what = "other";
    for (unsigned sd : seeds)
      if (holds(b.data(), size, sd)) what = fmt("pattern %u", sd);
    line(fmt("cuMemcpyDtoH(%s, %s)%s -> %s bytes=%s", n.c_str(), size_name(size).c_str(),
             why.c_str(), res(r).c_str(), r == CUDA_SUCCESS ? what.c_str() : "-"));
  }
  void write_pattern(const std::string& n, size_t size, unsigned seed,
                     const std::string& why = "") {
    std::vector<unsigned char> b(size);
    fill(b.data(), size, seed);
    line(fmt("cuMemcpyHtoD(%s, %s, pattern %u)%s -> %s", n.c_str(), size_name(size).c_str(), seed,
             why.c_str(), res(cuMemcpyHtoD(at(n), b.data(), size)).c_str()));
  }
  // Pointer attributes of an imported pointer, with its relations to the exporter's buffer.
  void imported_attrs(const std::string& n, const std::string& of) {
    const CUdeviceptr p = at(n);
    for (int a : {a_context, a_memory_type, a_device_pointer, a_host_pointer, a_sync_memops,
                  a_is_managed, a_device_ordinal, a_legacy_ipc, a_range_start, a_range_size,
                  a_mapped, a_allowed_handle_types, a_gdr, a_access_flags})
      attr(a, p);
    unsigned long long id = 0;
    if (attr(a_buffer_id, p, "", nullptr, &id) == CUDA_SUCCESS && have("id:" + of))
      line(fmt("  %s's BUFFER_ID %s %s's in the exporter", n.c_str(),
               id == value<unsigned long long>("id:" + of) ? "equals" : "differs from",
               of.c_str()));
    CUDA_POINTER_ATTRIBUTE_P2P_TOKENS tok{};
    if (attr(a_p2p_tokens, p, "", &tok) == CUDA_SUCCESS && have("tok:" + of)) {
      const auto e = value<CUDA_POINTER_ATTRIBUTE_P2P_TOKENS>("tok:" + of);
      line(fmt("  %s's tokens: p2pToken %s %s's, vaSpaceToken %s %s's", n.c_str(),
               tok.p2pToken == e.p2pToken ? "equals" : "differs from", of.c_str(),
               tok.vaSpaceToken == e.vaSpaceToken ? "equals" : "differs from", of.c_str()));
      const auto own = value<CUDA_POINTER_ATTRIBUTE_P2P_TOKENS>("own_tok");
      line(fmt("  %s's vaSpaceToken %s the importer's own (M's)", n.c_str(),
               tok.vaSpaceToken == own.vaSpaceToken ? "equals" : "differs from"));
    }
    attr(a_sync_memops, p, " (after P2P_TOKENS)");
  }
  void range(CUdeviceptr p) {
    CUdeviceptr b = 0;
    size_t sz = 0;
    const CUresult r = cuMemGetAddressRange(&b, &sz, p);
    std::string s = fmt("cuMemGetAddressRange(%s) -> %s", name(p).c_str(), res(r).c_str());
    if (r == CUDA_SUCCESS) s += fmt(" base=%s size=%zu", name(b).c_str(), sz);
    line(s);
  }

  void i0();
  void i1();
  void i2();
  void i3();

  sink m_sink;
  peer_link& m_link;
  std::map<std::string, std::string>& m_data;
  std::map<std::string, std::string> m_of;  // imported name -> exporter's buffer
  CUcontext m_i = nullptr;
  std::map<CUdeviceptr, int> m_refs;  // successful opens that returned a pointer, less closes
};

void ipc_importer::i0() {
  line("== importer: before cuInit, without a context");
  // The exporter's sizes, for naming (known from the sequence).
  const size_t sizes[] = {2 * MiB, 100, 100, 64 * MiB};
  const char* names[] = {"A", "B", "B2", "C"};
  for (int k = 0; k < 4; ++k)
    m_data["size:" + std::string(names[k])] = std::string((const char*)&sizes[k], sizeof(size_t));
  m_data["size:G"] = std::string((const char*)&sizes[0], sizeof(size_t));
  open("hA", 1, "PA0", "A", " before cuInit");
  line("cuInit(0) -> " + res(cuInit(0)));
  if (open("hA", 1, "PA0", "A", " without context")) close_(at("PA0"), " without context");
  line("cuCtxCreate I -> " + res(ctx_create(&m_i, 0, 0)));
  m_ctx.push_back({"I", m_i});
  alloc("M", 2 * MiB, " (the importer's own)");
  {
    CUDA_POINTER_ATTRIBUTE_P2P_TOKENS tok{};
    if (attr(a_p2p_tokens, at("M"), "", &tok) == CUDA_SUCCESS)
      m_data["own_tok"] = std::string((const char*)&tok, sizeof tok);
    attr(a_buffer_id, at("M"));
  }
  line("== importer: opening the exporter's handles");
  open("hA", 1, "PA", "A");
  open("hA", 1, "PA", "A", " again");
  open("hA", 0, "PA", "A");
  open("hA'", 1, "PA", "A", " (the second handle of A)");
  for (unsigned f : {2u, 3u, 0x100u, 0xffffffffu}) open("hA", f, "PAx", "A");
  open("hB", 1, "PB", "B");
  open("hB2", 1, "PB2", "B2");
  if (at("PB") && at("PB2") && have("va:B") && have("va:B2"))
    line(fmt("  PB2 - PB %s B2 - B in the exporter",
             at("PB2") - at("PB") == value<CUdeviceptr>("va:B2") - value<CUdeviceptr>("va:B")
                 ? "equals"
                 : "differs from"));
  open("hC", 1, "PC", "C");
  for (const char* k : {"hA+4096", "hA+last", "hB+4", "hC+2MiB", "hA+end"})
    if (have(k)) open(k, 1, std::string("P") + k, "");
  open("hF", 1, "PF", "", " (F freed before this open)");
  open("hG", 1, "PG", "G", " (G reuses F's VA)");
  {
    CUipcMemHandle z;
    std::memset(&z, 0, sizeof z);
    open_handle(z, "zeros", 1, "PZ", "");
    std::memset(&z, 0xA5, sizeof z);
    open_handle(z, "0xA5 bytes", 1, "PZ", "");
    if (have("hA")) {
      CUipcMemHandle t = handle("hA");
      t.reserved[63] ^= 0x5a;
      open_handle(t, "hA with byte 63 changed", 1, "PT", "A");
      t = handle("hA");
      t.reserved[0] ^= 0x5a;
      open_handle(t, "hA with byte 0 changed", 1, "PT", "A");
    }
  }
  // A handle of the importer's own memory.
  {
    CUipcMemHandle own;
    const CUresult r = cuIpcGetMemHandle(&own, at("M"));
    line("cuIpcGetMemHandle(M) -> " + res(r));
    if (r == CUDA_SUCCESS) open_handle(own, "hM (the importer's own)", 1, "PM", "");
  }
  line("== importer: bytes through the imported pointers");
  if (at("PA")) check("PA", 2 * MiB, {1});
  if (at("PB")) check("PB", 100, {2});
  if (at("PB2")) check("PB2", 100, {3});
  if (at("PC")) check("PC", 64 * MiB, {4});
  if (at("PA")) write_pattern("PA", 2 * MiB, 11);
  if (at("PB")) write_pattern("PB", 100, 12);
  if (at("PC")) write_pattern("PC", 64 * MiB, 14);
  line("cuCtxSynchronize -> " + res(cuCtxSynchronize()));
  line("== importer: pointer attributes");
  if (at("PA")) imported_attrs("PA", "A");
  if (at("PB")) {
    for (int a : {a_range_start, a_range_size, a_legacy_ipc}) attr(a, at("PB"));
    attr(a_buffer_id, at("PB"));
    attr(a_buffer_id, at("PB2"));
  }
  if (at("PA")) {
    attr(a_range_start, at("PA") + 4096);
    attr(a_range_size, at("PA") + 4096);
    attr(a_buffer_id, at("PA") + 4096);
    range(at("PA") + 4096);
    attr(a_range_size, at("PA") + 2 * MiB, " (one past the end)");
  }
  if (at("PB")) range(at("PB") + 10);
  if (at("PC")) range(at("PC") + MiB);
  line("== importer: exporting imported memory");
  if (at("PA")) {
    CUipcMemHandle h;
    const CUresult r = cuIpcGetMemHandle(&h, at("PA"));
    std::string s = "cuIpcGetMemHandle(PA) -> " + res(r);
    if (r == CUDA_SUCCESS)
      s += handle_bytes(h) == m_data["hA"] ? " bytes=same as hA" : " bytes=differ from hA";
    line(s);
    int fd = -77;
    const CUresult rd =
        cuMemGetHandleForAddressRange(&fd, at("PA"), 2 * MiB, (CUmemRangeHandleType)dma_buf_fd, 0);
    s = "cuMemGetHandleForAddressRange(PA, size=2MiB, DMA_BUF_FD, flags=0x0) -> " + res(rd);
    if (rd == CUDA_SUCCESS) {
      const off_t end = lseek(fd, 0, SEEK_END);
      s += fmt(" fd size=%s",
               end == (off_t)(2 * MiB) ? "=range" : fmt("%lld", (long long)end).c_str());
      close(fd);
    }
    line(s);
    if (at("PC")) {
      CUdeviceptr d = 0;
      const CUresult rc = cuMemAlloc(&d, 4096);
      if (rc == CUDA_SUCCESS) {
        add("N", d, 4096);
        line("cuMemAlloc(4096) N -> " + res(rc));
        line("cuMemcpyDtoD(N, PC, 4096) -> " + res(cuMemcpyDtoD(d, at("PC"), 4096)));
        line("cuMemcpyDtoD(PA, PC, 4096) -> " + res(cuMemcpyDtoD(at("PA"), at("PC"), 4096)));
        line("cuCtxSynchronize -> " + res(cuCtxSynchronize()));
        write_pattern("PA", 2 * MiB, 11, " (again)");
      }
    }
  }
}

void ipc_importer::i1() {
  line("== importer: a second context on the same device");
  CUcontext i2 = nullptr;
  line("cuCtxCreate I2 -> " + res(ctx_create(&i2, 0, 0)));
  m_ctx.push_back({"I2", i2});
  if (CUdeviceptr p = open("hA", 1, "PA_I2", "A", " in I2")) {
    attr(a_context, p, " in I2");
    close_(p, " in I2");
  }
  if (at("PA")) {
    attr(a_context, at("PA"), " in I2");
    check("PA", 4096, {1, 11}, " in I2");
  }
  line("cuCtxDestroy(I2) -> " + res(cuCtxDestroy(i2)));
  line("cuCtxSetCurrent(I) -> " + res(cuCtxSetCurrent(m_i)));
  line("== importer: closing");
  if (at("PA")) {
    const int n = m_refs[at("PA")];
    line(fmt("  PA was returned by %d successful opens not closed yet", n));
    for (int k = 0; k <= n; ++k) {
      close_(at("PA"), fmt(" (close %d)", k + 1));
      still_there(at("PA"));
    }
  }
  if (at("PB")) close_(at("PB") + 4, " (interior)");
  if (at("PC")) close_(at("PC") + 4096, " (interior)");
  close_(at("M"), " (cuMemAlloc memory, not IPC)");
  close_(0, " (null)");
  close_(0x7f0000000000ull, " (fake)");
  if (at("PB2")) {
    close_(at("PB2"));
    still_there(at("PB2"));
    close_(at("PB2"), " (again)");
    if (named* b = find("PB2")) b->live = false;
  }
  // The other handles opened above that this process still holds (kept: PB, PC). On the real
  // driver the handles of interior pointers and the changed handles returned PA, PB or PC
  // themselves (one reference more each, no name of their own), so this finds only PF and PG;
  // PB and PC stay open with two references each (hB and hB+4, hC and hC+2MiB).
  for (const char* n : {"PhA+4096", "PhA+last", "PhB+4", "PhC+2MiB", "PhA+end", "PF", "PG"}) {
    named* b = find(n);
    if (b && b->live) {
      while (m_refs[b->base] > 0 && cuIpcCloseMemHandle(b->base) == CUDA_SUCCESS) --m_refs[b->base];
      b->live = false;
    }
  }
  line("== importer: PA opened again after its last close");
  if (named* b = find("PA")) b->live = false;
  open("hA", 1, "PA2", "A");
}

void ipc_importer::i2() {
  line("== importer: after the exporter freed A, B and C");
  for (const char* n : {"PA2", "PB", "PC"}) {
    if (!at(n)) continue;
    attr(a_memory_type, at(n));
    attr(a_range_size, at(n));
  }
  if (at("PA2")) check("PA2", 2 * MiB, {1, 11, 21});
  if (at("PB")) check("PB", 100, {2, 12});
  if (at("PC")) check("PC", 64 * MiB, {4, 14, 22});
  line("cuCtxSynchronize -> " + res(cuCtxSynchronize()));
  if (at("PA2")) write_pattern("PA2", 2 * MiB, 31);
  if (at("PC")) write_pattern("PC", 64 * MiB, 32);
  line("cuCtxSynchronize -> " + res(cuCtxSynchronize()));
  if (at("PA2")) check("PA2", 2 * MiB, {1, 11, 21, 31}, " (after writing)");
  open("hA", 1, "PA3", "A", " (A freed, PA2 still open)");
  open("hA-freed", 1, "PAF", "A", " (handle got after A was freed)");
  open("hA'new", 1, "PAN", "A'", " (A' at A's VA?)");
  if (at("PAN")) check("PAN", 2 * MiB, {21});
  if (named* b = find("PAN")) {
    if (b->live) close_(b->base, " (PAN)");
    b->live = false;
  }
  if (at("PA2")) {
    const int n = m_refs[at("PA2")];
    for (int k = 0; k < n; ++k) {
      close_(at("PA2"), fmt(" (close %d)", k + 1));
      still_there(at("PA2"));
    }
    if (named* b = find("PA2")) b->live = false;
  }
  if (named* b = find("PA3"))
    if (b->live) close_(b->base, " (PA3)");
  // One close each: on the real driver PB and PC hold two references, so they stay mapped (the
  // transcript's header says so); kept as recorded.
  if (at("PB")) close_(at("PB"));
  if (at("PC")) close_(at("PC"));
  line("cuCtxSynchronize -> " + res(cuCtxSynchronize()));
  open("hA", 1, "PA4", "A", " (A freed, all closed)");
  open("hC", 1, "PC4", "C", " (C freed, all closed)");
}

void ipc_importer::i3() {
  line("== importer: NULL pointer argument");
  if (have("hG"))
    line("cuIpcOpenMemHandle(NULL, hG, flags=0x1) -> " +
         res(cuIpcOpenMemHandle(nullptr, handle("hG"), 1)));
  line("cuCtxDestroy(I) -> " + res(cuCtxDestroy(m_i)));
}

void ipc_importer::run() {
  if (!m_link.await()) return;
  i0();
  if (!turn()) return;
  i1();
  if (!turn()) return;
  i2();
  if (!turn()) return;
  i3();
  m_link.done();
}

}  // namespace

void run_dmabuf(const sink& out) {
  dmabuf_sequence s(out);
  s.run();
}

// Forks before any CUDA call. The child exports and the parent imports (the importer reaches
// into the exporter's memory, and an ancestor may always reach into a descendant);
// PROBE_IPC_EXPORTER_PARENT=1 swaps them. The transcript is the same either way.
void run_ipc(const sink& out) {
  const char* env = std::getenv("PROBE_IPC_EXPORTER_PARENT");
  const bool exporter_parent = env && std::strcmp(env, "1") == 0;
  out("== IPC between two processes (fork before any CUDA call)");
  out(fmt("# the %s is the parent", exporter_parent ? "exporter" : "importer"));
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    out("socketpair failed");
    return;
  }
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) {
    out("fork failed");
    return;
  }
  const bool parent = pid != 0;
  const bool exporter = parent == exporter_parent;
  close(sv[parent ? 1 : 0]);
  if (!parent) prctl(PR_SET_PDEATHSIG, SIGKILL);
  {
    peer_link l(sv[parent ? 0 : 1], parent, out, exporter ? "exporter" : "importer", pid);
    if (exporter) {
      ipc_exporter e(l);
      e.run();
    } else {
      ipc_importer i(l);
      i.run();
    }
  }
  close(sv[parent ? 0 : 1]);
  if (!parent) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  const char* child = exporter_parent ? "importer" : "exporter";
  if (WIFEXITED(status))
    out(fmt("%s: exited, status %d", child, WEXITSTATUS(status)));
  else if (WIFSIGNALED(status))
    out(fmt("%s: killed by signal %d", child, WTERMSIG(status)));
  out("== end");
}

}  // namespace cuda_probe
