// What the dma-buf and IPC sequences of the probe (probe_dmabuf.cpp, probe_ipc.cpp) share:
// attribute and errno names, sizes, byte patterns, and the namer that prints device memory
// after this run's allocations.
#pragma once

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

#ifdef CUDA_PROBE_MODEL
#include "models/driver/kernel/syscalls.h"
#endif

namespace cuda_probe::named_memory {

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

// CUmemRangeHandleType and CUmemRangeFlags (cuda.h).
constexpr int dma_buf_fd = 1;
constexpr unsigned long long mapping_type_pcie = 1;

inline const char* errno_name(int e) {
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

// What the sequences do with a dma-buf descriptor: the kernel's system calls, or in the model
// the simulated kernel's (models/driver/kernel/syscalls.h), which answer as Linux does.
#ifdef CUDA_PROBE_MODEL
namespace sys = p2psim::kernel::sys;
inline int fd_close(int fd) {
  return sys::close(fd);
}
inline int fd_fcntl(int fd, int cmd) {
  return sys::fcntl(fd, cmd);
}
inline off_t fd_lseek(int fd, off_t off, int whence) {
  return sys::lseek(fd, off, whence);
}
inline std::string fd_link(int fd) {
  return sys::fd_link(fd);
}
inline std::string fd_info(int fd) {
  return sys::fdinfo(fd);
}
inline unsigned long long fd_inode(int fd) {
  return sys::inode(fd);
}
inline int fd_mmap_errno(int fd) {
  return sys::mmap_errno(fd);
}
#else
inline int fd_close(int fd) {
  return close(fd);
}
inline int fd_fcntl(int fd, int cmd) {
  return fcntl(fd, cmd);
}
inline off_t fd_lseek(int fd, off_t off, int whence) {
  return lseek(fd, off, whence);
}
inline std::string fd_link(int fd) {
  char link[256] = {0};
  const ssize_t n = readlink(fmt("/proc/self/fd/%d", fd).c_str(), link, sizeof link - 1);
  return n > 0 ? std::string(link, (size_t)n) : std::string();
}
inline std::string fd_info(int fd) {
  std::string text;
  if (FILE* f = std::fopen(fmt("/proc/self/fdinfo/%d", fd).c_str(), "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, f)) text += buf;
    std::fclose(f);
  }
  return text;
}
inline unsigned long long fd_inode(int fd) {
  struct stat st {};
  return fstat(fd, &st) == 0 ? (unsigned long long)st.st_ino : 0;
}
// 0 if the buffer maps (never touched), else the errno of mmap.
inline int fd_mmap_errno(int fd) {
  void* m = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return errno;
  munmap(m, 4096);
  return 0;
}
#endif

// Pinned device memory on GPU 0 for cuMemCreate.
inline CUmemAllocationProp device_allocation(unsigned char gpu_direct_rdma = 0) {
  CUmemAllocationProp p;
  std::memset(&p, 0, sizeof p);
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = 0;
  p.allocFlags.gpuDirectRDMACapable = gpu_direct_rdma;
  return p;
}

inline std::string size_name(size_t n) {
  if (n && n % MiB == 0) return fmt("%zuMiB", n / MiB);
  if (n && n % KiB == 0) return fmt("%zuKiB", n / KiB);
  return fmt("%zu", n);
}

// The same byte pattern the host sequence uses, per seed.
inline void fill(void* p, size_t n, unsigned seed) {
  auto* b = static_cast<unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) b[i] = (unsigned char)(i * 7 + seed * 13 + (i >> 12));
}
inline bool holds(const void* p, size_t n, unsigned seed) {
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

}  // namespace cuda_probe::named_memory
