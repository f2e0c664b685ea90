// The program's host memory steps: its own memory from the kernel (malloc, free) and CUDA's
// page-locked memory and registration, each a named host buffer that cuMemcpy steps (`host:
// NAME`) and the third-party driver's register / dma steps use (docs/formats-scenario.md,
// "Host memory").
#include "sim/config/error.h"
#include "sim/core/program_read.h"
#include "sim/core/program_runner.h"

namespace p2psim::core {

// A step's `socket`, as a NUMA node; the first socket's without one.
int program_runner::node_of(const step_spec& s) const {
  return s.socket.empty() ? 0 : m_frames.node_of(s.socket);
}

std::string program_runner::host_step(const step_spec& s, int pid) {
  auto ptr = [](uint64_t va) { return reinterpret_cast<void*>(uintptr_t(va)); };
  if (s.call == "malloc") {
    void* p = m_os.memory().allocate(pid, s.size, node_of(s));
    if (!p) return "-ENOMEM";
    m_buffers[s.name] = {uint64_t(reinterpret_cast<uintptr_t>(p)), s.size, pid, true, true};
    return "ok";
  }
  if (s.call == "cuMemHostAlloc" || s.call == "cuMemAllocHost") {
    // The process allocates on the step's socket (numactl --membind).
    const int before = m_os.numa_node(pid);
    m_os.set_numa_node(pid, node_of(s));
    void* p = nullptr;
    const CUresult r = s.call == "cuMemAllocHost" ? cuMemAllocHost(&p, s.size)
                                                  : cuMemHostAlloc(&p, s.size, s.flags);
    m_os.set_numa_node(pid, before);
    if (r == CUDA_SUCCESS)
      m_buffers[s.name] = {uint64_t(reinterpret_cast<uintptr_t>(p)), s.size, pid, true, true};
    return step_result(r);
  }
  auto it = m_buffers.find(s.buffer);
  if (it == m_buffers.end()) return step_result(CUDA_ERROR_INVALID_VALUE);  // its alloc failed
  buffer& b = it->second;
  if (s.call == "free") {
    if (!m_os.memory().free(pid, ptr(b.va))) return "-EINVAL";
    b.live = false;
    return "ok";
  }
  if (s.call == "cuMemFreeHost") {
    const CUresult r = cuMemFreeHost(ptr(b.va));
    if (r == CUDA_SUCCESS) b.live = false;
    return step_result(r);
  }
  if (s.call == "cuMemHostRegister")
    return step_result(cuMemHostRegister(
        ptr(b.va + s.offset), s.size ? s.size : b.size - std::min(s.offset, b.size), s.flags));
  return step_result(cuMemHostUnregister(ptr(b.va + s.offset)));  // cuMemHostUnregister
}

}  // namespace p2psim::core
