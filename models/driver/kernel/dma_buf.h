// Linux's dma-buf core as an exporter and a process see it (include/linux/dma-buf.h,
// Documentation/driver-api/dma-buf.rst): a buffer a driver shares as a file. The exporter
// (the NVIDIA driver, for cuMemGetHandleForAddressRange) makes a dma_buf over memory it keeps
// alive until the buffer is released; the file's descriptor goes into the calling process's
// table, and the buffer lives while a descriptor or an importer's reference holds it (the
// last one out runs the exporter's release). Pure C++.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace p2psim::kernel {

using pid_t = int;

// What an exporter implements (struct dma_buf_ops). Its destructor is the release op: it runs
// when the buffer's last reference goes.
class dma_buf_exporter {
 public:
  virtual ~dma_buf_exporter() = default;
  // The exporter's module name, fdinfo's exp_name ("nv_dmabuf" for the NVIDIA driver).
  virtual const char* name() const = 0;
};

struct dma_buf {
  uint64_t size = 0;  // bytes, a multiple of the CPU page
  uint64_t ino = 0;   // the inode of its file, one per buffer (dma_buf_getfile)
  std::unique_ptr<dma_buf_exporter> exporter;
};

// Flags of a dma-buf's file as dma_buf_fd opens it, in the kernel's octal: O_RDWR and
// O_CLOEXEC (what /proc/PID/fdinfo prints, "flags: 02000002").
inline constexpr unsigned dma_buf_file_flags = 02000002;

// The open file descriptors of an OS's processes; only dma-buf files so far.
class file_table {
 public:
  // dma_buf_export + dma_buf_fd: a buffer of `size` bytes over `exporter`'s memory, and a
  // descriptor for it in `pid`'s table (the lowest free one, from 3 up: 0-2 are the stdio).
  int export_fd(pid_t pid, uint64_t size, std::unique_ptr<dma_buf_exporter> exporter);
  // close(2): 0, or -EBADF for a descriptor `pid` does not have open.
  int close(pid_t pid, int fd);
  // dma_buf_get: a reference to the buffer behind `fd` (nullptr: not a dma-buf, -EBADF).
  std::shared_ptr<dma_buf> get(pid_t pid, int fd) const;
  // Every descriptor of `pid` closed (its exit).
  void close_all(pid_t pid) { m_fds.erase(pid); }
  size_t open_count(pid_t pid) const;

 private:
  std::map<pid_t, std::map<int, std::shared_ptr<dma_buf>>> m_fds;
  uint64_t m_next_ino = 1;
};

}  // namespace p2psim::kernel
