// The simulated kernel-module context the driver models run in: Linux errno values, a
// minimal `struct pci_dev`, and the simulated operating system a driver entry point is
// called in: the process that is "current" (an ioctl runs in the calling process; a free
// callback in the process that freed the memory or exited), the NVIDIA driver loaded into
// its kernel, and the CUDA user space of its processes. Pure C++.
#pragma once

#include <cerrno>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "models/driver/kernel/dma_buf.h"
#include "models/driver/kernel/user_memory.h"

#ifndef ENOTSUPP
#define ENOTSUPP 524  // kernel-internal "operation not supported" (include/linux/errno.h)
#endif

namespace p2psim::iommu {
class iommu_domain;
}
namespace p2psim::nv {
class nvidia_driver;
}
namespace p2psim::cuda {
class copy_executor;
class instant_copy_executor;
namespace detail {
struct state;
}
}  // namespace p2psim::cuda

// What a third-party driver gets from the PCI core for its device. Only what the nv-p2p
// DMA-mapping calls need: which device it is and the IOMMU domain its DMA goes through.
struct pci_dev {
  std::string name;
  uint16_t bdf = 0;
  p2psim::iommu::iommu_domain* iommu = nullptr;  // nullptr: no IOMMU on this device's path
};

namespace p2psim::kernel {

// One simulated machine's operating system: `current`, the NVIDIA driver loaded into its
// kernel, and the user space its processes share the driver through (libcuda's state per
// process, and where CUDA copies are carried out). Whoever builds a simulation makes one over
// the driver it made (a program runner, a litmus run, a test world, a benchmark) and binds it
// (`running_in`) around the code that calls the C entry points, which take no context
// argument: nv-p2p.h and cuda.h find their driver through the OS they are called in, as a
// real kernel has one NVIDIA driver. Nothing here outlives its owner, and two OSes in one
// process share nothing.
class os {
 public:
  // `nvidia`: not owned; it must outlive the OS.
  explicit os(nv::nvidia_driver& nvidia);
  ~os();
  os(const os&) = delete;
  os& operator=(const os&) = delete;

  pid_t current_pid() const { return m_current; }  // 0: no process (a kernel thread)
  // The scheduler's switch: `pid` runs from here on. For processes that take turns on one OS
  // (each switches back to itself when it resumes); a call made as a process uses as_process.
  void switch_to(pid_t pid) { m_current = pid; }
  nv::nvidia_driver& nvidia() const { return m_nvidia; }
  cuda::detail::state& cuda_state() { return *m_cuda; }
  // Where CUDA copies go: the executor set, else at once on the GPUs' VRAM.
  cuda::copy_executor& copies() { return *m_copies; }
  void set_copy_executor(cuda::copy_executor* e);  // nullptr: the instant one. Not owned.
  // Its processes' memory: blocks, the frames behind them, pins.
  user_memory& memory() { return m_memory; }
  // Its dma-bufs: the processes' descriptors for them, importers' attachments and mappings.
  dma_buf_core& dma_bufs() { return m_dma_bufs; }
  // The NUMA node a process's memory is allocated on (numactl --membind); 0 unless set.
  int numa_node(pid_t pid) const;
  void set_numa_node(pid_t pid, int node) { m_nodes[pid] = node; }

 private:
  friend class as_process;
  nv::nvidia_driver& m_nvidia;
  pid_t m_current = 0;
  user_memory m_memory;     // before the CUDA state, whose pinned blocks it holds
  dma_buf_core m_dma_bufs;  // its buffers hold memory of the driver, which outlives the OS
  std::map<pid_t, int> m_nodes;
  std::unique_ptr<cuda::detail::state> m_cuda;
  std::unique_ptr<cuda::instant_copy_executor> m_instant;
  cuda::copy_executor* m_copies;
};

// The OS the calling code runs in (the innermost `running_in`), or nullptr.
os* bound_os();
// The same, for code that cannot run outside one: throws std::logic_error when none is bound.
os& current_os();

// Binds `o` for a scope; scopes nest, and the end of one restores the binding it found.
class running_in {
 public:
  explicit running_in(os& o);
  ~running_in();
  running_in(const running_in&) = delete;
  running_in& operator=(const running_in&) = delete;

 private:
  os* m_saved;
};

// The process on whose behalf the current OS's kernel is running (Linux's `current`).
pid_t current_pid();

// Sets `current` of the current OS for a scope, as a system call or callback does, and
// restores it at the end. SystemC threads interleave at every wait(): a scope that waits must
// be the only one open across that wait, or other threads' scopes must not wait (they then
// end, restoring it, before it resumes).
class as_process {
 public:
  explicit as_process(pid_t pid) : m_os(current_os()), m_saved(m_os.m_current) {
    m_os.m_current = pid;
  }
  ~as_process() { m_os.m_current = m_saved; }
  as_process(const as_process&) = delete;
  as_process& operator=(const as_process&) = delete;

 private:
  os& m_os;
  pid_t m_saved;
};

}  // namespace p2psim::kernel
