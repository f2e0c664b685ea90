// Linux's dma-buf core (include/linux/dma-buf.h, Documentation/driver-api/dma-buf.rst) as an
// exporter, a process and an importing driver see it. The exporter (the NVIDIA driver, for
// cuMemGetHandleForAddressRange) makes a buffer over memory it keeps alive until the buffer is
// released; the buffer's file goes into the calling process's descriptor table. An importer
// (a third-party kernel driver) takes a reference with dma_buf_get, attaches its device
// (statically, or dynamically with a move_notify callback), and maps the attachment to get the
// bus addresses its DMA engine uses. The buffer lives while a descriptor or a reference holds
// it; the last one out runs the exporter's release. Pure C++; the calls keep Linux's names,
// arguments and error returns (ERR_PTR), and a call with a pointer the core does not know
// (stale, never made) returns an error instead of corrupting anything.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "models/driver/kernel/err_ptr.h"

struct pci_dev;  // kernel.h

namespace p2psim::kernel {

using pid_t = int;
struct dma_buf_attachment;
struct sg_table;

// One contiguous run of bus addresses of a mapped attachment: sg_dma_address / sg_dma_len of
// a scatterlist entry after dma_map_sg.
struct dma_segment {
  uint64_t address = 0;
  uint64_t length = 0;
};

// What an exporter implements (struct dma_buf_ops). Its destructor is the release op: it runs
// when the buffer's last reference goes.
class dma_buf_exporter {
 public:
  virtual ~dma_buf_exporter() = default;
  // The exporter's module name, fdinfo's exp_name ("nv_dmabuf" for the NVIDIA driver).
  virtual const char* name() const = 0;
  // map_dma_buf: fills `out` with the buffer's memory as the attachment's device reaches it,
  // in order; 0 or a negative errno (the core returns ERR_PTR of it).
  virtual int map(const dma_buf_attachment& a, sg_table& out) = 0;
  // unmap_dma_buf: undoes that map.
  virtual void unmap(const dma_buf_attachment& a, const sg_table& sgt) = 0;
};

struct dma_buf {
  uint64_t size = 0;  // bytes, a multiple of the CPU page
  uint64_t ino = 0;   // the inode of its file, one per buffer (dma_buf_getfile)
  std::unique_ptr<dma_buf_exporter> exporter;
  uint64_t refs = 0;  // descriptors and dma_buf_get references
  std::set<dma_buf_attachment*> attachments;
};

// struct dma_buf_attach_ops: what a dynamic importer gives dma_buf_dynamic_attach.
struct dma_buf_attach_ops {
  // The importer can DMA to another device's memory (a BAR): without it an exporter of device
  // memory may refuse to map.
  bool allow_peer2peer = false;
  // The exporter is moving the buffer: the importer must stop using its mappings and map again.
  // Mandatory for a dynamic importer.
  void (*move_notify)(dma_buf_attachment* attach) = nullptr;
};

struct dma_buf_attachment {
  dma_buf* dmabuf = nullptr;
  pci_dev* dev = nullptr;
  const dma_buf_attach_ops* importer_ops = nullptr;  // nullptr: a static attachment
  void* importer_priv = nullptr;
  bool peer2peer = false;  // importer_ops->allow_peer2peer
};

// A mapped attachment's scatter list (struct sg_table after dma_map_sg).
struct sg_table {
  std::vector<dma_segment> segments;
};

enum dma_data_direction { DMA_BIDIRECTIONAL = 0, DMA_TO_DEVICE = 1, DMA_FROM_DEVICE = 2 };

// Flags of a dma-buf's file as dma_buf_fd opens it, in the kernel's octal: O_RDWR and
// O_CLOEXEC (what /proc/PID/fdinfo prints, "flags: 02000002").
inline constexpr unsigned dma_buf_file_flags = 02000002;

// A file a driver opens for a process that is not a dma-buf (the NVIDIA driver's VMM shareable
// handle): what it refers to is the driver's. The last descriptor's close destroys it, which is
// its release.
class driver_file {
 public:
  virtual ~driver_file() = default;
};

// The dma-bufs of one simulated OS: its processes' descriptors (for dma-bufs, and for the
// drivers' other files) and the buffers, attachments and mappings that live. kernel::os owns
// one.
class dma_buf_core {
 public:
  dma_buf_core() = default;
  dma_buf_core(const dma_buf_core&) = delete;
  dma_buf_core& operator=(const dma_buf_core&) = delete;
  ~dma_buf_core();

  // dma_buf_export + dma_buf_fd: a buffer of `size` bytes over `exporter`'s memory, and a
  // descriptor for it in `pid`'s table (the lowest free one, from 3 up: 0-2 are the stdio).
  int export_fd(pid_t pid, uint64_t size, std::unique_ptr<dma_buf_exporter> exporter);
  // A descriptor for a driver's file in `pid`'s table (the lowest free one).
  int open_fd(pid_t pid, std::shared_ptr<driver_file> f);
  // close(2): 0, or -EBADF for a descriptor `pid` does not have open.
  int close(pid_t pid, int fd);
  // The buffer behind `pid`'s descriptor, without a reference (nullptr: not open, or not a
  // dma-buf).
  dma_buf* file(pid_t pid, int fd) const;
  // The driver's file behind `pid`'s descriptor (nullptr: not open, or a dma-buf).
  driver_file* other_file(pid_t pid, int fd) const;
  // Every descriptor of `pid` closed (its exit).
  void close_all(pid_t pid);

  dma_buf* get(pid_t pid, int fd);
  void put(dma_buf* buf);
  dma_buf_attachment* attach(dma_buf* buf, pci_dev* dev, const dma_buf_attach_ops* ops, void* priv);
  void detach(dma_buf* buf, dma_buf_attachment* attach);
  sg_table* map(dma_buf_attachment* attach);
  void unmap(dma_buf_attachment* attach, sg_table* sgt);
  // dma_buf_move_notify: the exporter is moving the buffer; each dynamic importer is told.
  void move_notify(dma_buf* buf);

  size_t live_buffers() const { return m_buffers.size(); }
  size_t live_mappings() const { return m_mappings.size(); }
  // Calls that passed something the core does not know or that is wrong for the call (a
  // buffer already released, an attachment of another buffer, a mapping unmapped twice):
  // Linux would WARN or corrupt memory; the model refuses them and counts them here.
  uint64_t misuse() const { return m_misuse; }

 private:
  void unref(dma_buf* buf);

  struct descriptor {
    dma_buf* buf = nullptr;             // a dma-buf, one of its references
    std::shared_ptr<driver_file> file;  // or a driver's file
  };
  int lowest_free(pid_t pid) const;

  std::map<pid_t, std::map<int, descriptor>> m_fds;
  std::map<dma_buf*, std::unique_ptr<dma_buf>> m_buffers;  // live ones
  std::map<dma_buf_attachment*, std::unique_ptr<dma_buf_attachment>> m_attachments;
  std::map<sg_table*, std::pair<dma_buf_attachment*, std::unique_ptr<sg_table>>> m_mappings;
  uint64_t m_next_ino = 1;
  uint64_t m_misuse = 0;
};

}  // namespace p2psim::kernel

// The calls an importing driver makes (include/linux/dma-buf.h), on the OS it runs in
// (kernel::current_os()); a descriptor is the calling process's (kernel::current_pid()).
// dma_buf_get: ERR_PTR(-EBADF) for a descriptor that is not open, ERR_PTR(-EINVAL) for one that
// is not a dma-buf.
p2psim::kernel::dma_buf* dma_buf_get(int fd);
void dma_buf_put(p2psim::kernel::dma_buf* dmabuf);
// A static attachment: the exporter keeps the memory where it is while it is mapped.
p2psim::kernel::dma_buf_attachment* dma_buf_attach(p2psim::kernel::dma_buf* dmabuf, pci_dev* dev);
// A dynamic attachment: ERR_PTR(-EINVAL) without importer_ops->move_notify.
p2psim::kernel::dma_buf_attachment* dma_buf_dynamic_attach(
    p2psim::kernel::dma_buf* dmabuf, pci_dev* dev,
    const p2psim::kernel::dma_buf_attach_ops* importer_ops, void* importer_priv);
void dma_buf_detach(p2psim::kernel::dma_buf* dmabuf, p2psim::kernel::dma_buf_attachment* attach);
// The bus addresses of the buffer for the attachment's device: ERR_PTR(-errno) on failure
// (-ENOMEM where the exporter declined, as the core reports a NULL map_dma_buf).
p2psim::kernel::sg_table* dma_buf_map_attachment(p2psim::kernel::dma_buf_attachment* attach,
                                                 p2psim::kernel::dma_data_direction direction);
void dma_buf_unmap_attachment(p2psim::kernel::dma_buf_attachment* attach,
                              p2psim::kernel::sg_table* sgt,
                              p2psim::kernel::dma_data_direction direction);
// What an exporter that moves memory calls: every dynamic attachment's move_notify runs (the
// NVIDIA exporter never moves its memory, so never calls it).
void dma_buf_move_notify(p2psim::kernel::dma_buf* dmabuf);
