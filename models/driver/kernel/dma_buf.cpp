#include "models/driver/kernel/dma_buf.h"

#include <cerrno>

#include "models/driver/kernel/kernel.h"

namespace p2psim::kernel {

// The OS goes: what importers left mapped is dropped without unmapping (their devices may be
// gone already); the buffers' release lets go of the exporters' memory.
dma_buf_core::~dma_buf_core() {
  m_mappings.clear();
  m_attachments.clear();
  m_buffers.clear();
}

int dma_buf_core::lowest_free(pid_t pid) const {
  int fd = 3;
  auto it = m_fds.find(pid);
  if (it == m_fds.end()) return fd;
  for (const auto& [n, f] : it->second) {  // ordered: the first gap is the lowest free one
    if (n != fd) break;
    ++fd;
  }
  return fd;
}

int dma_buf_core::export_fd(pid_t pid, uint64_t size, std::unique_ptr<dma_buf_exporter> exporter) {
  auto buf = std::make_unique<dma_buf>();
  buf->size = size;
  buf->ino = m_next_ino++;
  buf->exporter = std::move(exporter);
  buf->refs = 1;
  const int fd = lowest_free(pid);
  m_fds[pid].emplace(fd, descriptor{buf.get(), nullptr});
  m_buffers.emplace(buf.get(), std::move(buf));
  return fd;
}

int dma_buf_core::open_fd(pid_t pid, std::shared_ptr<driver_file> f) {
  const int fd = lowest_free(pid);
  m_fds[pid].emplace(fd, descriptor{nullptr, std::move(f)});
  return fd;
}

dma_buf* dma_buf_core::file(pid_t pid, int fd) const {
  auto it = m_fds.find(pid);
  if (it == m_fds.end()) return nullptr;
  auto f = it->second.find(fd);
  return f == it->second.end() ? nullptr : f->second.buf;
}

driver_file* dma_buf_core::other_file(pid_t pid, int fd) const {
  auto it = m_fds.find(pid);
  if (it == m_fds.end()) return nullptr;
  auto f = it->second.find(fd);
  return f == it->second.end() ? nullptr : f->second.file.get();
}

int dma_buf_core::close(pid_t pid, int fd) {
  auto it = m_fds.find(pid);
  if (it == m_fds.end() || !it->second.count(fd)) return -EBADF;
  const descriptor d = it->second.at(fd);
  it->second.erase(fd);
  if (d.buf) unref(d.buf);
  return 0;  // a driver's file goes with its last descriptor (d's copy, here)
}

void dma_buf_core::close_all(pid_t pid) {
  auto it = m_fds.find(pid);
  if (it == m_fds.end()) return;
  std::map<int, descriptor> fds = std::move(it->second);
  m_fds.erase(it);
  for (auto& [fd, d] : fds)
    if (d.buf) unref(d.buf);
}

dma_buf* dma_buf_core::get(pid_t pid, int fd) {
  dma_buf* buf = file(pid, fd);
  if (!buf) return ERR_PTR(other_file(pid, fd) ? -EINVAL : -EBADF);  // Linux: not a dma-buf
  ++buf->refs;
  return buf;
}

void dma_buf_core::put(dma_buf* buf) {
  if (!m_buffers.count(buf)) {
    ++m_misuse;
    return;
  }
  unref(buf);
}

// The last reference: Linux releases a buffer whose importer forgot to detach with a WARN;
// the model detaches what is left first, so the exporter's release finds nothing mapped.
void dma_buf_core::unref(dma_buf* buf) {
  if (--buf->refs > 0) return;
  if (!buf->attachments.empty()) {
    ++m_misuse;
    for (dma_buf_attachment* a : std::set<dma_buf_attachment*>(buf->attachments)) detach(buf, a);
  }
  m_buffers.erase(buf);
}

dma_buf_attachment* dma_buf_core::attach(dma_buf* buf, pci_dev* dev, const dma_buf_attach_ops* ops,
                                         void* priv) {
  if (!m_buffers.count(buf) || !dev) {
    ++m_misuse;
    return ERR_PTR(-EINVAL);
  }
  if (ops && !ops->move_notify) return ERR_PTR(-EINVAL);  // WARN_ON in dma_buf_dynamic_attach
  auto a = std::make_unique<dma_buf_attachment>();
  a->dmabuf = buf;
  a->dev = dev;
  a->importer_ops = ops;
  a->importer_priv = priv;
  a->peer2peer = ops && ops->allow_peer2peer;
  dma_buf_attachment* p = a.get();
  buf->attachments.insert(p);
  m_attachments.emplace(p, std::move(a));
  return p;
}

void dma_buf_core::detach(dma_buf* buf, dma_buf_attachment* attach) {
  auto it = m_attachments.find(attach);
  if (!m_buffers.count(buf) || it == m_attachments.end() || attach->dmabuf != buf) {
    ++m_misuse;
    return;
  }
  // Mappings the importer left: unmapped first (Linux WARNs).
  for (auto m = m_mappings.begin(); m != m_mappings.end();)
    if (m->second.first == attach) {
      ++m_misuse;
      buf->exporter->unmap(*attach, *m->first);
      m = m_mappings.erase(m);
    } else {
      ++m;
    }
  buf->attachments.erase(attach);
  m_attachments.erase(it);
}

sg_table* dma_buf_core::map(dma_buf_attachment* attach) {
  if (!m_attachments.count(attach)) {
    ++m_misuse;
    return ERR_PTR(-EINVAL);
  }
  auto sgt = std::make_unique<sg_table>();
  if (int r = attach->dmabuf->exporter->map(*attach, *sgt)) return ERR_PTR(r);
  sg_table* p = sgt.get();
  m_mappings.emplace(p, std::make_pair(attach, std::move(sgt)));
  return p;
}

void dma_buf_core::unmap(dma_buf_attachment* attach, sg_table* sgt) {
  auto it = m_mappings.find(sgt);
  if (it == m_mappings.end() || it->second.first != attach) {
    ++m_misuse;
    return;
  }
  attach->dmabuf->exporter->unmap(*attach, *sgt);
  m_mappings.erase(it);
}

void dma_buf_core::move_notify(dma_buf* buf) {
  if (!m_buffers.count(buf)) {
    ++m_misuse;
    return;
  }
  for (dma_buf_attachment* a : std::set<dma_buf_attachment*>(buf->attachments))
    if (a->importer_ops) a->importer_ops->move_notify(a);
}

}  // namespace p2psim::kernel

using namespace p2psim::kernel;

dma_buf* dma_buf_get(int fd) {
  return current_os().dma_bufs().get(current_pid(), fd);
}
void dma_buf_put(dma_buf* dmabuf) {
  current_os().dma_bufs().put(dmabuf);
}
dma_buf_attachment* dma_buf_attach(dma_buf* dmabuf, pci_dev* dev) {
  return current_os().dma_bufs().attach(dmabuf, dev, nullptr, nullptr);
}
dma_buf_attachment* dma_buf_dynamic_attach(dma_buf* dmabuf, pci_dev* dev,
                                           const dma_buf_attach_ops* importer_ops,
                                           void* importer_priv) {
  if (!importer_ops) return ERR_PTR(-EINVAL);
  return current_os().dma_bufs().attach(dmabuf, dev, importer_ops, importer_priv);
}
void dma_buf_detach(dma_buf* dmabuf, dma_buf_attachment* attach) {
  current_os().dma_bufs().detach(dmabuf, attach);
}
sg_table* dma_buf_map_attachment(dma_buf_attachment* attach, dma_data_direction) {
  return current_os().dma_bufs().map(attach);
}
void dma_buf_unmap_attachment(dma_buf_attachment* attach, sg_table* sgt, dma_data_direction) {
  current_os().dma_bufs().unmap(attach, sgt);
}
void dma_buf_move_notify(dma_buf* dmabuf) {
  current_os().dma_bufs().move_notify(dmabuf);
}
