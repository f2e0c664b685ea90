#include "models/driver/kernel/kernel.h"

namespace p2psim::kernel {
namespace {
pid_t g_current = 0;  // 0: no process (kernel thread)
}
pid_t current_pid() {
  return g_current;
}
void set_current_pid(pid_t pid) {
  g_current = pid;
}
}  // namespace p2psim::kernel
