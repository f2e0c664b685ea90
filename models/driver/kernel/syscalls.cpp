#include "models/driver/kernel/syscalls.h"

#include <fcntl.h>
#include <fmt/format.h>

#include <cerrno>

#include "models/driver/kernel/kernel.h"

namespace p2psim::kernel::sys {
namespace {

dma_buf* open_file(int fd) {
  dma_buf* f = current_os().dma_bufs().file(current_pid(), fd);
  if (!f) errno = EBADF;
  return f;
}

}  // namespace

int close(int fd) {
  const int r = current_os().dma_bufs().close(current_pid(), fd);
  if (r == 0) return 0;
  errno = -r;
  return -1;
}

int fcntl(int fd, int cmd) {
  if (!open_file(fd)) return -1;
  if (cmd == F_GETFD) return FD_CLOEXEC;
  if (cmd == F_GETFL) return O_RDWR;
  errno = EINVAL;
  return -1;
}

off_t lseek(int fd, off_t offset, int whence) {
  dma_buf* f = open_file(fd);
  if (!f) return -1;
  if (offset != 0 || (whence != SEEK_SET && whence != SEEK_END)) {
    errno = EINVAL;
    return -1;
  }
  return whence == SEEK_END ? off_t(f->size) : 0;
}

std::string fd_link(int fd) {
  return open_file(fd) ? "/dmabuf:" : "";
}

std::string fdinfo(int fd) {
  dma_buf* f = open_file(fd);
  if (!f) return "";
  return fmt::format("pos:\t0\nflags:\t0{:o}\nino:\t{}\nsize:\t{}\ncount:\t1\nexp_name:\t{}\n",
                     dma_buf_file_flags, f->ino, f->size, f->exporter->name());
}

uint64_t inode(int fd) {
  dma_buf* f = open_file(fd);
  return f ? f->ino : 0;
}

int mmap_errno(int fd) {
  return open_file(fd) ? ENOTSUPP : EBADF;
}

}  // namespace p2psim::kernel::sys
