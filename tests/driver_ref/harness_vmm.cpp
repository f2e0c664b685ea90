// The harness's CUDA VMM commands: each runs on the models and on the reference, which
// predicts its result; where the models choose (which frames, which VA) the reference learns
// the choice and checks it is a legal one.
#include <fmt/format.h>

#include "models/driver/cuda/cuda_state.h"
#include "tests/driver_ref/harness.h"

namespace p2psim::driver_ref {

namespace {
constexpr uint64_t two_mib = 2ull << 20;
uint8_t pattern_byte(size_t step, uint64_t k) {
  return uint8_t(step * 131 + k * 7 + (k >> 9));
}
}  // namespace

std::vector<int> harness::own_handles(int pid) const {
  std::vector<int> out;
  for (size_t i = 0; i < m_ref.vmm_handles(); ++i)
    if (m_ref.vmm_handle(int(i)).pid == pid) out.push_back(int(i));
  return out;
}

std::vector<int> harness::own_reservations(int pid) const {
  std::vector<int> out;
  for (size_t i = 0; i < m_ref.reservations(); ++i)
    if (m_ref.reservation(int(i)).pid == pid) out.push_back(int(i));
  return out;
}

std::vector<int> harness::own_mappings(int pid) const {
  std::vector<int> out;
  for (size_t i = 0; i < m_ref.vmm_mappings(); ++i)
    if (m_ref.vmm_mapping(int(i)).pid == pid && m_ref.vmm_mapping(int(i)).alive)
      out.push_back(int(i));
  return out;
}

bool harness::vmm_in(int pid, uint64_t va, uint64_t bytes) const {
  for (uint64_t n = va / page_bytes; bytes && n <= (va + bytes - 1) / page_bytes; ++n)
    if (const ref_page* p = m_ref.page(pid, n); p && p->ctx < 0) return true;
  return false;
}

void harness::vmm_create(const command& c) {
  process_slot& s = slot(c);
  const int gpu = int(c.a % uint32_t(m_config.ref.gpus));
  static constexpr uint64_t sizes[] = {two_mib, two_mib, 2 * two_mib, 3 * two_mib / 2};
  const uint64_t size = sizes[c.variant % 4];
  const bool rdma = c.b & 1;
  CUmemAllocationProp p{};
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = gpu;
  p.allocFlags.gpuDirectRDMACapable = rdma;
  CUmemGenericAllocationHandle h = 0;
  kernel::as_process as(s.pid);
  const CUresult r = cuMemCreate(&h, size, &p, 0);
  if (size % two_mib) {
    expect_eq(r, CUDA_ERROR_INVALID_VALUE, "cuMemCreate of a size not a multiple of 2 MiB");
    return;
  }
  if (m_ref.frames_free(gpu) < size / page_bytes) {
    expect_eq(r, CUDA_ERROR_OUT_OF_MEMORY, "cuMemCreate with too few frames free");
    return;
  }
  expect_eq(r, CUDA_SUCCESS, fmt::format("cuMemCreate({})", size));
  ++m_counts["VMM handles"];
  const auto frames = m_world.driver().vmm_frames(cuda::detail::vmm_handle_of(h)->memory);
  expect_eq(frames.size(), size / page_bytes, "frames of a new handle");
  int index = -1;
  const std::string bad = m_ref.learn_vmm_memory(s.pid, gpu, rdma, frames, index);
  if (!bad.empty()) fail(bad);
  m_vmm_handles.resize(index + 1);
  m_vmm_handles[index] = h;
}

void harness::vmm_release(const command& c) {
  process_slot& s = slot(c);
  const auto own = own_handles(s.pid);
  const int i = c.variant % 6 == 5 ? -1 : pick(c.a, own.size()) < 0 ? -1 : own[c.a % own.size()];
  kernel::as_process as(s.pid);
  const CUresult r = cuMemRelease(i < 0 ? 0 : m_vmm_handles[i]);
  const bool ok = i >= 0 && m_ref.release_handle(i);
  expect_eq(r, ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE, "cuMemRelease");
  if (ok) ++m_counts["VMM releases"];
}

void harness::vmm_reserve(const command& c) {
  process_slot& s = slot(c);
  uint64_t size = (c.b % 3 + 1) * two_mib, hint = 0;
  if (c.variant % 5 == 4) size = two_mib / 2;
  const auto own = own_reservations(s.pid);
  if (c.variant % 5 == 3 && !own.empty()) hint = m_ref.reservation(own[c.c % own.size()]).va;
  CUdeviceptr va = 0;
  kernel::as_process as(s.pid);
  const CUresult r = cuMemAddressReserve(&va, size, 0, hint, 0);
  if (size % two_mib) {
    expect_eq(r, CUDA_ERROR_INVALID_VALUE, "cuMemAddressReserve of a size not a multiple");
    return;
  }
  expect_eq(r, CUDA_SUCCESS, fmt::format("cuMemAddressReserve({})", size));
  ++m_counts[va == hint ? "VMM reservations at their hint" : "VMM reservations"];
  const std::string bad = m_ref.learn_reservation(s.pid, va, size, hint);
  if (!bad.empty()) fail(bad);
}

void harness::vmm_free(const command& c) {
  process_slot& s = slot(c);
  const auto own = own_reservations(s.pid);
  if (own.empty()) return;
  const ref_reservation& res = m_ref.reservation(own[c.a % own.size()]);
  const uint64_t va = res.va, size = res.size + (c.variant % 2 ? two_mib : 0);
  CUresult r;
  {
    kernel::as_process as(s.pid);
    r = cuMemAddressFree(va, size);
  }
  const bool ok = m_ref.free_reservation(s.pid, va, size);
  expect_eq(r, ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE, "cuMemAddressFree");
  if (ok) ++m_counts["VMM reservations freed"];
}

void harness::vmm_map(const command& c) {
  process_slot& s = slot(c);
  const auto res = own_reservations(s.pid);
  const auto handles = own_handles(s.pid);
  if (res.empty() || handles.empty()) return;
  const ref_reservation& rv = m_ref.reservation(res[c.a % res.size()]);
  const uint64_t va = rv.va + (c.b % (rv.size / two_mib)) * two_mib;
  const int h = handles[c.c % handles.size()];
  const ref_vmm_handle& rh = m_ref.vmm_handle(h);
  const uint64_t size = m_ref.vmm_memory(rh.memory).frames.size() * page_bytes;
  CUresult r;
  {
    kernel::as_process as(s.pid);
    r = cuMemMap(va, size, 0, m_vmm_handles[h], 0);
  }
  bool reserved = false;  // a live reservation of the process holds va
  for (int i : res)
    if (m_ref.reservation(i).alive && va >= m_ref.reservation(i).va &&
        va - m_ref.reservation(i).va < m_ref.reservation(i).size)
      reserved = true;
  const bool ok = rh.usable() && reserved && m_ref.map(s.pid, va, h);
  expect_eq(r, ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE, fmt::format("cuMemMap(0x{:x})", va));
  if (ok) ++m_counts["VMM mappings"];
}

void harness::vmm_unmap(const command& c) {
  process_slot& s = slot(c);
  const auto res = own_reservations(s.pid);
  if (res.empty()) return;
  const ref_reservation& rv = m_ref.reservation(res[c.a % res.size()]);
  const uint64_t va = rv.va + (c.b % (rv.size / two_mib)) * two_mib;
  const uint64_t size = c.variant % 3 == 0   ? two_mib
                        : c.variant % 3 == 1 ? rv.va + rv.size - va
                                             : 2 * two_mib;
  auto script = m_ref.unmap(s.pid, va, size, s.pid);
  if (!script) {
    kernel::as_process as(s.pid);
    expect_eq(cuMemUnmap(va, size), CUDA_ERROR_INVALID_VALUE,
              "cuMemUnmap of a range a mapping lies partly in");
    return;
  }
  ++m_counts[script->empty() ? "VMM unmaps" : "VMM unmaps revoking pins"];
  with_script(*script, s.pid, [&] { return cuMemUnmap(va, size); });
}

void harness::vmm_access(const command& c) {
  process_slot& s = slot(c);
  const auto own = own_mappings(s.pid);
  if (own.empty()) return;
  ref_vmm_mapping& m = m_ref.vmm_mapping(own[c.a % own.size()]);
  static constexpr unsigned flags[] = {3, 3, 1, 0, 2};  // read-write most often; 2 is invalid
  const unsigned f = flags[c.variant % 5];
  CUmemAccessDesc d{};
  d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  // Mostly the GPU of the caller's current context, which its copies use.
  const int ctx = current(s);
  d.location.id =
      ctx >= 0 && c.c % 4 ? m_ref.context(ctx).gpu : int(c.c % uint32_t(m_config.ref.gpus));
  d.flags = CUmemAccess_flags(f);
  CUresult r;
  {
    kernel::as_process as(s.pid);
    r = cuMemSetAccess(m.va, m.size, &d, 1);
  }
  expect_eq(r, f == 2 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS, "cuMemSetAccess");
  if (f == 2) return;
  if (f)
    m.access[d.location.id] = f;
  else
    m.access.erase(d.location.id);
}

void harness::vmm_copy(const command& c) {
  process_slot& s = slot(c);
  const auto own = own_mappings(s.pid);
  if (own.empty()) return;
  const ref_vmm_mapping& m = m_ref.vmm_mapping(own[c.a % own.size()]);
  const uint64_t ptr = m.va + c.b % m.size, bytes = 1 + c.c % 700;
  const bool to_device = c.variant % 2 == 0;
  std::vector<uint8_t> host(bytes);
  for (uint64_t k = 0; k < bytes; ++k) host[k] = pattern_byte(m_step, k);
  CUresult r;
  {
    kernel::as_process as(s.pid);
    r = to_device ? cuMemcpyHtoD(ptr, host.data(), bytes) : cuMemcpyDtoH(host.data(), ptr, bytes);
  }
  const char* name = to_device ? "cuMemcpyHtoD (VMM)" : "cuMemcpyDtoH (VMM)";
  const int ctx = current(s);
  if (ctx < 0) {
    expect_eq(r, CUDA_ERROR_INVALID_CONTEXT, fmt::format("{} without a current context", name));
    return;
  }
  const bool ok = m_ref.vmm_accessible(s.pid, m_ref.context(ctx).gpu, ptr, bytes, to_device);
  expect_eq(r, ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE, name);
  ++m_counts[ok ? "VMM copies" : "VMM copies refused"];
  if (!ok) return;
  copied(s.pid, ptr, host, to_device, name);
}

void harness::vmm_get_pages(const command& c) {
  process_slot& s = slot(c);
  const auto own = own_mappings(s.pid);
  if (own.empty()) return;
  const ref_vmm_mapping& m = m_ref.vmm_mapping(own[c.a % own.size()]);
  reference::pin_request r;
  r.caller = s.pid;
  r.va = m.va;
  r.length = c.b % 2 ? page_bytes : m.size;
  r.persistent = c.variant % 3 == 2;
  if (c.variant % 3 == 0) std::tie(r.p2p, r.va_space) = tokens_for(current(s));
  const int want = m_ref.predict_get_pages(r);
  nvidia_p2p_page_table_t* t = nullptr;
  m_callback_data.push_back({this, int(m_pins.size())});
  int got;
  {
    kernel::as_process as(s.pid);
    got = r.persistent ? nvidia_p2p_get_pages_persistent(r.va, r.length, &t, 0)
                       : nvidia_p2p_get_pages(r.p2p, r.va_space, r.va, r.length, &t,
                                              callback_trampoline, &m_callback_data.back());
  }
  expect_eq(got, want, fmt::format("nvidia_p2p_get_pages of VMM memory (0x{:x})", r.va));
  ++m_counts[got ? "VMM pins refused" : "VMM pins"];
  if (got) return;
  const int i = m_ref.get_pages(r, c.action, false);
  expect_eq(record_pin(t), i, "pin index");
}

}  // namespace p2psim::driver_ref
