// The program's CUDA IPC steps (docs/formats-scenario.md, "CUDA IPC"): handles one process
// exports, buffers another opens from them, which stand for the exporter's memory, so copies
// and DMAs through either are checked against the same bytes.
#include "sim/core/program_runner.h"

namespace p2psim::core {

std::string program_runner::ipc_step(const step_spec& s, int pid) {
  (void)pid;
  if (s.call == "cuIpcOpenMemHandle") {
    const ipc_handle& h = m_ipc_handles.at(s.handle);
    CUdeviceptr p = 0;
    const CUresult r = cuIpcOpenMemHandle(&p, h.handle, s.flags);
    if (r == CUDA_SUCCESS) {
      m_buffers[s.name] = {p, m_buffers.at(h.buffer).size, pid};
      m_image_of[s.name] = image_key(h.buffer);
    }
    return step_result(r);
  }
  auto it = m_buffers.find(s.buffer);
  const buffer b = it == m_buffers.end() ? buffer{0, 0, pid, false} : it->second;
  if (s.call == "cuIpcCloseMemHandle") {
    const CUresult r = cuIpcCloseMemHandle(b.va);
    if (r == CUDA_SUCCESS) it->second.live = false;
    return step_result(r);
  }
  ipc_handle h;  // cuIpcGetMemHandle
  h.buffer = s.buffer;
  const CUresult r = cuIpcGetMemHandle(&h.handle, b.va + s.offset);
  if (r != CUDA_SUCCESS) h.handle = {};
  m_ipc_handles[s.name] = h;
  return step_result(r);
}

}  // namespace p2psim::core
