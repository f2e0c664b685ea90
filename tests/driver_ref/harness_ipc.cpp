// The harness's CUDA IPC commands: a process exports an allocation, another opens it, copies
// through it and closes it; the reference predicts every result, learns where the models put
// an import and checks it, and follows every byte (docs/driver-model.md, "CUDA IPC").
#include <fmt/format.h>

#include <cstring>

#include "tests/driver_ref/harness.h"

namespace p2psim::driver_ref {

namespace {
uint8_t pattern_byte(size_t step, uint64_t k) {
  return uint8_t(step * 97 + k * 11 + (k >> 7));
}
}  // namespace

bool harness::imported_in(int pid, uint64_t va, uint64_t bytes) const {
  for (uint64_t n = va / page_bytes; bytes && n <= (va + bytes - 1) / page_bytes; ++n)
    if (const ref_page* p = m_ref.page(pid, n); p && p->imported) return true;
  return false;
}

void harness::ipc_get(const command& c) {
  process_slot& s = slot(c);
  const int alloc = pick_allocation(c);
  if (alloc < 0) return;
  const ref_allocation& a = m_ref.allocation(alloc);
  const uint64_t ptr = c.variant % 8 == 7 ? a.va + a.size : a.va + c.b % a.size;
  CUipcMemHandle h;
  std::memset(&h, 0xAB, sizeof h);
  CUresult r;
  {
    kernel::as_process as(s.pid);
    r = cuIpcGetMemHandle(&h, ptr);
  }
  if (current(s) < 0) {
    expect_eq(r, CUDA_ERROR_INVALID_CONTEXT, "cuIpcGetMemHandle without a current context");
    return;
  }
  const int e = m_ref.ipc_export(s.pid, ptr);
  if (e < 0) {
    expect_eq(r, CUDA_ERROR_INVALID_VALUE,
              fmt::format("cuIpcGetMemHandle(0x{:x}) outside a live allocation", ptr));
    return;
  }
  expect_eq(r, CUDA_SUCCESS, "cuIpcGetMemHandle");
  ++m_counts["IPC handles"];
  if (size_t(e) < m_ipc_handles.size()) {
    expect(std::memcmp(&m_ipc_handles[e], &h, sizeof h) == 0,
           "cuIpcGetMemHandle: another handle for the same allocation");
    return;
  }
  expect_eq(int(m_ipc_handles.size()), e, "IPC export index");
  m_ipc_handles.push_back(h);
}

void harness::ipc_open(const command& c) {
  process_slot& s = slot(c);
  const int e = pick(c.a, m_ipc_handles.size());
  if (e < 0) return;
  CUipcMemHandle h = m_ipc_handles[e];
  unsigned flags = 1;
  switch (c.variant % 8) {
    case 5:
      flags = c.b & 0x1fe;  // without LAZY_ENABLE_PEER_ACCESS
      break;
    case 6:
      flags = 1 | (c.b & ~1u);  // other bits are ignored
      break;
    case 7:
      std::memset(&h, c.b & 1 ? 0 : 0xA5, sizeof h);  // no export has these bytes
      break;
  }
  const int ctx = current(s);
  int span = -1;
  const bool garbage = c.variant % 8 == 7;
  const bool reachable =
      ctx < 0 || peer_reachable(m_ref.context(ctx).gpu, m_ref.ipc_exported(e).gpu);
  const auto want = garbage && ctx >= 0 && (flags & 1)
                        ? reference::ipc_open_result::invalid_value
                        : m_ref.predict_ipc_open(ctx, e, flags, reachable, span);
  CUdeviceptr p = 0;
  CUresult r;
  {
    kernel::as_process as(s.pid);
    r = cuIpcOpenMemHandle(&p, h, flags);
  }
  using res = reference::ipc_open_result;
  switch (want) {
    case res::invalid_context:
      expect_eq(r, CUDA_ERROR_INVALID_CONTEXT, "cuIpcOpenMemHandle: no context, or its own");
      return;
    case res::invalid_value:
      expect_eq(r, CUDA_ERROR_INVALID_VALUE, "cuIpcOpenMemHandle of no export, or bad flags");
      return;
    case res::invalid_handle:
      expect_eq(r, CUDA_ERROR_INVALID_HANDLE, "cuIpcOpenMemHandle open in another context");
      return;
    case res::unreachable:
      expect_eq(r, CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "cuIpcOpenMemHandle of an unreachable GPU");
      return;
    case res::mapped:
      break;
  }
  expect_eq(r, CUDA_SUCCESS, "cuIpcOpenMemHandle");
  ++m_counts[span < 0 ? "IPC imports mapped" : "IPC opens of a mapped span"];
  const std::string bad = m_ref.learn_ipc_open(ctx, e, p);
  if (!bad.empty()) fail("cuIpcOpenMemHandle: " + bad);
}

void harness::ipc_close(const command& c) {
  process_slot& s = slot(c);
  const auto imports = m_ref.ipc_imports(s.pid);
  if (imports.empty()) return;
  uint64_t ptr = imports[c.a % imports.size()].first;
  if (c.variant % 6 == 5) ptr += 1 + c.b % 512;  // an interior pointer
  CUresult r;
  {
    kernel::as_process as(s.pid);
    r = cuIpcCloseMemHandle(ptr);
  }
  if (current(s) < 0) {
    expect_eq(r, CUDA_ERROR_INVALID_CONTEXT, "cuIpcCloseMemHandle without a current context");
    return;
  }
  const bool done = m_ref.ipc_close(s.pid, ptr);
  expect_eq(r, done ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE,
            fmt::format("cuIpcCloseMemHandle(0x{:x})", ptr));
  if (done) ++m_counts["IPC closes"];
}

// A copy into (variant even) or out of an open import, checked in the exporter's frames.
void harness::ipc_copy(const command& c) {
  process_slot& s = slot(c);
  const auto imports = m_ref.ipc_imports(s.pid);
  if (imports.empty()) return;
  const auto [ptr, e] = imports[c.a % imports.size()];
  const uint64_t size = m_ref.allocation(m_ref.ipc_exported(e).alloc).size;
  const uint64_t offset = c.b % size, bytes = std::min<uint64_t>(1 + c.c % 700, size - offset);
  const bool to_device = c.variant % 2 == 0;
  std::vector<uint8_t> host(bytes);
  for (uint64_t k = 0; k < bytes; ++k) host[k] = pattern_byte(m_step, k);
  CUresult r;
  {
    kernel::as_process as(s.pid);
    r = to_device ? cuMemcpyHtoD(ptr + offset, host.data(), bytes)
                  : cuMemcpyDtoH(host.data(), ptr + offset, bytes);
  }
  const char* name = to_device ? "cuMemcpyHtoD (IPC)" : "cuMemcpyDtoH (IPC)";
  if (current(s) < 0) {
    expect_eq(r, CUDA_ERROR_INVALID_CONTEXT, fmt::format("{} without a current context", name));
    return;
  }
  expect_eq(r, CUDA_SUCCESS, name);
  ++m_counts["IPC copies"];
  copied(s.pid, ptr + offset, host, to_device, name);
}

}  // namespace p2psim::driver_ref
