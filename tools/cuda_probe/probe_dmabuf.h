// The probe's dma-buf sequence (`probe --dmabuf`), shared by its two source files:
// probe_dmabuf.cpp (the descriptor and the cuMemAlloc sections) and probe_dmabuf_vmm.cpp (VMM
// memory). See probe_dmabuf.cpp for what it records.
#pragma once

#include "probe_named_memory.h"

namespace cuda_probe {

class dmabuf_sequence : named_memory::namer {
 public:
  explicit dmabuf_sequence(const sink& out) : namer(out) {}
  void run();

 private:
  // cuMemGetHandleForAddressRange on [p, p + size); on success the descriptor is described
  // and closed unless `keep`. Returns the descriptor (or -1).
  int get(CUdeviceptr p, size_t size, const std::string& why = "",
          int type = named_memory::dma_buf_fd, unsigned long long flags = 0, bool keep = false);
  // What the descriptor is: valid, close-on-exec, the dma-buf's size (lseek to its end), its
  // link and fdinfo, whether it can be mapped.
  void describe(int fd, size_t requested, const std::string& what = "fd");
  static unsigned long long ino(int fd) { return named_memory::fd_inode(fd); }
  void dev_attr(int a, const char* n);

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

}  // namespace cuda_probe
