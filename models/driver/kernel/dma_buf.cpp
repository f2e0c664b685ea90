#include "models/driver/kernel/dma_buf.h"

#include <cerrno>

namespace p2psim::kernel {

int file_table::export_fd(pid_t pid, uint64_t size, std::unique_ptr<dma_buf_exporter> exporter) {
  auto buf = std::make_shared<dma_buf>();
  buf->size = size;
  buf->ino = m_next_ino++;
  buf->exporter = std::move(exporter);
  auto& fds = m_fds[pid];
  int fd = 3;
  for (const auto& [n, f] : fds) {  // ordered: the first gap is the lowest free descriptor
    if (n != fd) break;
    ++fd;
  }
  fds.emplace(fd, std::move(buf));
  return fd;
}

int file_table::close(pid_t pid, int fd) {
  auto it = m_fds.find(pid);
  if (it == m_fds.end() || !it->second.erase(fd)) return -EBADF;
  return 0;
}

std::shared_ptr<dma_buf> file_table::get(pid_t pid, int fd) const {
  auto it = m_fds.find(pid);
  if (it == m_fds.end()) return nullptr;
  auto f = it->second.find(fd);
  return f == it->second.end() ? nullptr : f->second;
}

size_t file_table::open_count(pid_t pid) const {
  auto it = m_fds.find(pid);
  return it == m_fds.end() ? 0 : it->second.size();
}

}  // namespace p2psim::kernel
