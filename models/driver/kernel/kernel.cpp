#include "models/driver/kernel/kernel.h"

#include <stdexcept>

#include "models/driver/cuda/cuda_state.h"

namespace p2psim::kernel {
namespace {
// What `running_in` bound: a pointer to an OS its owner made, never an object of its own.
os* g_bound = nullptr;
}  // namespace

os::os(nv::nvidia_driver& nvidia)
    : m_nvidia(nvidia),
      m_cuda(std::make_unique<cuda::detail::state>()),
      m_instant(std::make_unique<cuda::instant_copy_executor>(nvidia)),
      m_copies(m_instant.get()) {}
os::~os() = default;

void os::set_copy_executor(cuda::copy_executor* e) {
  m_copies = e ? e : m_instant.get();
}

int os::numa_node(pid_t pid) const {
  auto it = m_nodes.find(pid);
  return it == m_nodes.end() ? 0 : it->second;
}

os* bound_os() {
  return g_bound;
}
os& current_os() {
  if (!g_bound) throw std::logic_error("no simulated OS bound (kernel::running_in)");
  return *g_bound;
}

running_in::running_in(os& o) : m_saved(g_bound) {
  g_bound = &o;
}
running_in::~running_in() {
  g_bound = m_saved;
}

pid_t current_pid() {
  return current_os().current_pid();
}

}  // namespace p2psim::kernel
