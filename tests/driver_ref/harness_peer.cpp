// The harness's GPU-to-GPU commands (docs/driver-model.md; tests/data/cuda_probe/
// h200x2_cuda13_peer.txt): cuDeviceCanAccessPeer against the machine's reach, and
// cuMemcpyDtoD / cuMemcpyPeer between two allocations of the caller, on one GPU or two, with
// or without peer access (the path differs, the bytes do not), every byte followed.
#include <fmt/format.h>

#include "tests/driver_ref/harness.h"

namespace p2psim::driver_ref {

void harness::can_access_peer(const command& c) {
  const int gpus = m_config.ref.gpus;
  const int from = int(c.a % uint32_t(gpus + 1)), to = int(c.b % uint32_t(gpus + 1));
  int can = -1;
  kernel::as_process as(slot(c).pid);
  const CUresult r = cuDeviceCanAccessPeer(&can, from, to);
  if (from >= gpus || to >= gpus) {
    expect_eq(r, CUDA_ERROR_INVALID_DEVICE, "cuDeviceCanAccessPeer of no such device");
    return;
  }
  expect_eq(r, CUDA_SUCCESS, "cuDeviceCanAccessPeer");
  expect_eq(can, peer_reachable(from, to) ? 1 : 0, fmt::format("canAccessPeer {} -> {}", from, to));
}

void harness::peer_copy(const command& c) {
  process_slot& s = slot(c);
  const int src = pick_allocation(c);
  command other = c;
  other.a = c.b;
  const int dst = pick_allocation(other);
  if (src < 0 || dst < 0) return;
  const ref_allocation& a = m_ref.allocation(src);
  const ref_allocation& b = m_ref.allocation(dst);
  const uint64_t from = a.va + c.c % a.size, to = b.va + (c.c >> 12) % b.size;
  const uint64_t bytes = 1 + (c.c >> 20) % 700;        // may run past an allocation's end
  if (from < to + bytes && to < from + bytes) return;  // overlapping copies are undefined
  for (uint64_t p : {from, to})                        // VMM or IPC memory here: vmm_copy, ipc_copy
    if (vmm_in(s.pid, p, bytes) || imported_in(s.pid, p, bytes)) return;
  const bool peer_call = c.variant % 2;
  CUresult r;
  {
    kernel::as_process as(s.pid);
    const int ctx = current(s);
    CUcontext x = ctx >= 0 ? m_contexts[ctx] : nullptr;
    r = peer_call ? cuMemcpyPeer(to, x, from, x, bytes) : cuMemcpyDtoD(to, from, bytes);
  }
  const char* name = peer_call ? "cuMemcpyPeer" : "cuMemcpyDtoD";
  if (current(s) < 0) {
    expect_eq(r, CUDA_ERROR_INVALID_CONTEXT, fmt::format("{} without a current context", name));
    return;
  }
  if (m_ref.allocation_at(s.pid, from, bytes) < 0 || m_ref.allocation_at(s.pid, to, bytes) < 0) {
    expect_eq(r, CUDA_ERROR_INVALID_VALUE, fmt::format("{} outside live allocations", name));
    return;
  }
  expect_eq(r, CUDA_SUCCESS, name);
  std::vector<uint8_t> bytes_moved(bytes);
  for (uint64_t k = 0; k < bytes; ++k) {
    const ref_page* p = m_ref.page(s.pid, (from + k) / page_bytes);
    bytes_moved[k] = m_ref.vram(p->gpu)[p->frame * page_bytes + (from + k) % page_bytes];
  }
  const bool two_gpus = m_ref.context(a.ctx).gpu != m_ref.context(b.ctx).gpu;
  ++m_counts[two_gpus ? "copies between GPUs" : "copies within a GPU"];
  copied(s.pid, to, bytes_moved, true, name);
}

}  // namespace p2psim::driver_ref
