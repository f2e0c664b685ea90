// The program's VMM steps (docs/formats-scenario.md, "VMM"): handles a step makes and
// releases, reserved VA a step names as a buffer, and the handles mapped into it. What the
// program put into a buffer follows the handle: unmapped, its bytes go with the handle, and
// mapped again (anywhere), they come back, so that copies and DMAs are checked against the
// memory the VA reaches now.
#include "sim/core/program_runner.h"

namespace p2psim::core {

std::string program_runner::vmm_step(const step_spec& s, int pid) {
  auto ordinal = [&] {
    for (int g = 0; g < m_driver.gpu_count(); ++g)
      if (m_driver.gpu(g).name == s.device) return g;
    return -1;  // check_program refused the scenario already
  };
  if (s.call == "cuMemCreate") {
    CUmemAllocationProp p{};
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = ordinal();
    p.allocFlags.gpuDirectRDMACapable = s.rdma ? 1 : 0;
    CUmemGenericAllocationHandle h = 0;
    const CUresult r = cuMemCreate(&h, s.size, &p, 0);
    if (r == CUDA_SUCCESS) m_handles[s.name] = {h, s.size, std::vector<uint8_t>(s.size, 0)};
    return step_result(r);
  }
  // A handle whose cuMemCreate failed is 0 here, as the program would have it.
  auto h = m_handles.find(s.handle);
  const CUmemGenericAllocationHandle handle = h == m_handles.end() ? 0 : h->second.handle;
  if (s.call == "cuMemRelease") return step_result(cuMemRelease(handle));
  if (s.call == "cuMemAddressReserve") {
    CUdeviceptr va = 0;
    const CUresult r = cuMemAddressReserve(&va, s.size, s.align, 0, 0);
    if (r == CUDA_SUCCESS) m_buffers[s.name] = {va, s.size, pid};
    return step_result(r);
  }
  auto it = m_buffers.find(s.buffer);
  const buffer b = it == m_buffers.end() ? buffer{0, 0, pid, false} : it->second;
  if (s.call == "cuMemAddressFree") {
    const CUresult r = cuMemAddressFree(b.va, b.size);
    if (r == CUDA_SUCCESS) it->second.live = false;
    return step_result(r);
  }
  auto& image = m_images[image_key(s.buffer)];
  image.resize(std::max<uint64_t>(image.size(), b.size));
  auto& mapped = m_mapped[s.buffer];
  if (s.call == "cuMemMap") {
    const uint64_t size = h == m_handles.end() ? 0 : h->second.size;
    const CUresult r = cuMemMap(b.va + s.offset, size, 0, handle, 0);
    if (r == CUDA_SUCCESS) {
      const auto& bytes = h->second.image;
      const uint64_t n = std::min<uint64_t>(size, image.size() - std::min(s.offset, b.size));
      std::copy(bytes.begin(), bytes.begin() + n, image.begin() + s.offset);
      mapped[s.offset] = s.handle;
    }
    return step_result(r);
  }
  const uint64_t len = s.has_size ? s.size : b.size - std::min(s.offset, b.size);
  if (s.call == "cuMemSetAccess") {
    CUmemAccessDesc d{};
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = ordinal();
    d.flags = s.access == "rw"     ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
              : s.access == "read" ? CU_MEM_ACCESS_FLAGS_PROT_READ
                                   : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    return step_result(cuMemSetAccess(b.va + s.offset, len, &d, 1));
  }
  // cuMemUnmap: the free callbacks of pins on the range run inside it, and may wait for
  // in-flight DMA (guide 6.4), as in cuMemFree.
  const CUresult r = cuMemUnmap(b.va + s.offset, len);
  if (r == CUDA_SUCCESS)
    for (auto m = mapped.lower_bound(s.offset); m != mapped.end() && m->first < s.offset + len;) {
      auto& handle_image = m_handles.at(m->second).image;
      const uint64_t n = std::min<uint64_t>(handle_image.size(), image.size() - m->first);
      std::copy(image.begin() + m->first, image.begin() + m->first + n, handle_image.begin());
      m = mapped.erase(m);
    }
  return step_result(r);
}

}  // namespace p2psim::core
