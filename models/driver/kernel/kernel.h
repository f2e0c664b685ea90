// The simulated kernel-module context the driver models run in: Linux errno values, a
// minimal `struct pci_dev`, and the process that is "current" when a driver entry point is
// called (an ioctl runs in the calling process; a free callback in the process that freed
// the memory or exited). Pure C++.
#pragma once

#include <cerrno>
#include <cstdint>
#include <string>

#ifndef ENOTSUPP
#define ENOTSUPP 524  // kernel-internal "operation not supported" (include/linux/errno.h)
#endif

namespace p2psim::iommu {
class iommu_domain;
}

// What a third-party driver gets from the PCI core for its device. Only what the nv-p2p
// DMA-mapping calls need: which device it is and the IOMMU domain its DMA goes through.
struct pci_dev {
  std::string name;
  uint16_t bdf = 0;
  p2psim::iommu::iommu_domain* iommu = nullptr;  // nullptr: no IOMMU on this device's path
};

namespace p2psim::kernel {

using pid_t = int;

// The process on whose behalf the kernel is running (Linux's `current`).
pid_t current_pid();
void set_current_pid(pid_t pid);

// Sets `current` for a scope, as a system call or callback does.
class as_process {
 public:
  explicit as_process(pid_t pid) : m_saved(current_pid()) { set_current_pid(pid); }
  ~as_process() { set_current_pid(m_saved); }
  as_process(const as_process&) = delete;
  as_process& operator=(const as_process&) = delete;

 private:
  pid_t m_saved;
};

}  // namespace p2psim::kernel
