// The system calls a simulated process makes on its file descriptors, as Linux answers them
// for a dma-buf file (drivers/dma-buf/dma-buf.c): what a program does with the descriptor
// cuMemGetHandleForAddressRange returned before it hands it to an importing driver. Each acts
// on the calling process (kernel::current_pid()) of the bound OS and returns what libc does:
// -1 with errno set on failure.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace p2psim::kernel::sys {

int close(int fd);
// F_GETFD (FD_CLOEXEC: dma_buf_fd opens with O_CLOEXEC) and F_GETFL (O_RDWR).
int fcntl(int fd, int cmd);
// A dma-buf seeks only to its start or its end, which gives its size (dma_buf_llseek).
off_t lseek(int fd, off_t offset, int whence);
// The target of /proc/self/fd/FD ("/dmabuf:" and the buffer's name, empty unless set).
std::string fd_link(int fd);
// The text of /proc/self/fdinfo/FD: "key:\tvalue" lines (empty for a descriptor not open).
std::string fdinfo(int fd);
// st_ino of fstat(2): one inode per buffer; 0 for a descriptor not open.
uint64_t inode(int fd);
// mmap(2) of the buffer: the NVIDIA exporter has no mmap op, so -1 with errno ENOTSUPP.
int mmap_errno(int fd);

}  // namespace p2psim::kernel::sys
