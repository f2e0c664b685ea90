// cuMemcpy* and streams: a copy is checked against the calling process's live allocations,
// cut along the driver's VA -> VRAM page mapping (allocation pages are not contiguous in
// VRAM), flagged with the synchronization it owes (guide 5.7), and handed to the installed
// copy executor. Issuing a copy and synchronizing a stream make landed RDMA writes visible.
#include <algorithm>
#include <span>

#include "models/driver/cuda/cuda_state.h"

namespace p2psim::cuda {

// Host bytes go through the simulated kernel's memory: the CPU's view of the process's pages.
void instant_copy_executor::copy(const copy_request& r) {
  auto& d = m_driver;
  auto& memory = kernel::current_os().memory();
  auto* hsrc = static_cast<const uint8_t*>(r.host_src);
  auto* hdst = static_cast<uint8_t*>(r.host_dst);
  std::vector<uint8_t> bounce;  // source and destination may overlap
  for (const copy_segment& s : r.segments) {
    bounce.resize(s.bytes);
    if (r.src_gpu < 0) {
      memory.read(hsrc + s.src, bounce);
      d.gpu(r.dst_gpu).vram->write(s.dst, bounce);
    } else if (r.dst_gpu < 0) {
      d.gpu(r.src_gpu).vram->read(s.src, bounce);
      memory.write(hdst + s.dst, bounce);
    } else {
      d.gpu(r.src_gpu).vram->read(s.src, bounce);
      d.gpu(r.dst_gpu).vram->write(s.dst, bounce);
    }
  }
}

}  // namespace p2psim::cuda

using namespace p2psim::cuda;
using namespace p2psim::cuda::detail;
using p2psim::nv::nvidia_driver;

namespace {

nvidia_driver& drv() {
  return *installed_driver();
}

CUstream_st* live_stream(CUstream h) {
  for (auto& s : global().streams)
    if (s.get() == h) return s->alive && live_context(s->ctx) ? s.get() : nullptr;
  return nullptr;
}

// What a call on stream `h` returns when it cannot use it: a stream of the caller's whose
// context was destroyed gives CUDA_ERROR_CONTEXT_IS_DESTROYED (what driver 580 on an H200
// returned for cuStreamSynchronize and cuMemcpyHtoDAsync in one program; in another the
// dangling handle crashed it: tools/cuda_probe does not probe it), any other handle that is not
// a live stream of the caller's CUDA_ERROR_INVALID_HANDLE.
CUresult unusable_stream(CUstream h) {
  for (auto& s : global().streams)
    if (s.get() == h && s->ctx->pid == p2psim::kernel::current_pid() && !live_context(s->ctx))
      return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  return CUDA_ERROR_INVALID_HANDLE;
}

// The live allocation of the calling process holding all of [va, va + bytes), or nullptr.
nvidia_driver::allocation* device_range(CUdeviceptr va, size_t bytes) {
  auto* a = drv().find_allocation(p2psim::kernel::current_pid(), va);
  return a && bytes <= a->va + a->size - va ? a : nullptr;
}

// Where byte `va` lives: its GPU and VRAM offset, and how many bytes follow it on that page.
struct vram_byte {
  int gpu;
  uint64_t offset, left;
};
vram_byte locate(CUdeviceptr va) {
  auto v = drv().vram_of(p2psim::kernel::current_pid(), va);  // present: va is allocated
  return {v->first, v->second, p2psim::nv::gpu_page_bytes - va % p2psim::nv::gpu_page_bytes};
}

CUresult issue(copy_kind kind, CUdeviceptr dst_va, void* host_dst, CUdeviceptr src_va,
               const void* host_src, size_t bytes, bool async, CUstream stream) {
  if (CUresult r = check_init()) return r;
  CUctx_st* c = current_context();
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  if (stream) {
    CUstream_st* s = live_stream(stream);
    if (!s) return unusable_stream(stream);
    c = s->ctx;  // a stream's work runs in its own context, whichever is current
  }
  const bool src_dev = kind != copy_kind::host_to_device;
  const bool dst_dev = kind != copy_kind::device_to_host;
  if ((!src_dev && !host_src) || (!dst_dev && !host_dst)) return CUDA_ERROR_INVALID_VALUE;
  if (bytes == 0) return CUDA_SUCCESS;
  // A device side is one cuMemAlloc allocation, or VMM mappings the context's GPU may read
  // (and, to copy into, write): driver 580 refuses a copy into memory mapped read-only or
  // without access, or across an unmapped hole, before copying anything.
  nvidia_driver::allocation* sa = src_dev ? device_range(src_va, bytes) : nullptr;
  nvidia_driver::allocation* da = dst_dev ? device_range(dst_va, bytes) : nullptr;
  const bool src_vmm = src_dev && !sa && vmm_accessible(c, src_va, bytes, false);
  const bool dst_vmm = dst_dev && !da && vmm_accessible(c, dst_va, bytes, true);
  if ((src_dev && !sa && !src_vmm) || (dst_dev && !da && !dst_vmm)) return CUDA_ERROR_INVALID_VALUE;

  copy_request r;
  r.kind = kind;
  r.pid = p2psim::kernel::current_pid();
  r.ctx = c;
  r.host_src = host_src;
  r.host_dst = host_dst;
  r.src_va = src_va;
  r.dst_va = dst_va;
  r.bytes = bytes;
  r.async = async;
  r.stream = stream;
  r.src_sync_memops = (sa && sa->sync_memops) || src_vmm;  // VMM memory always has it
  r.dst_sync_memops = (da && da->sync_memops) || dst_vmm;
  r.ctx_sync_memops = c->flags & CU_CTX_SYNC_MEMOPS;
  // The block holding the host side's first byte decides: a copy that starts in page-locked
  // memory must end there (driver 580 refuses it before copying anything), one that starts in
  // pageable memory is pageable, whatever it runs into.
  const void* host = host_src ? host_src : host_dst;
  if (host && pinned_range(host, 1) && !pinned_range(host, bytes)) return CUDA_ERROR_INVALID_VALUE;
  if (const pinned_block* b = host ? pinned_range(host, bytes) : nullptr) {
    r.host_pinned = true;
    r.host_bus = b->bus + (uint64_t(reinterpret_cast<uintptr_t>(host)) - b->start);
  }
  // Pageable host memory is staged: a copy into it completes before the call returns, one
  // out of it returns once staged. A copy engine reaches pinned memory itself: synchronous
  // copies complete on return, asynchronous ones run on.
  const bool sync_memops = r.src_sync_memops || r.dst_sync_memops || r.ctx_sync_memops;
  if (async)
    r.complete_on_return = kind == copy_kind::device_to_host && !r.host_pinned;
  else
    r.complete_on_return = kind == copy_kind::device_to_host || sync_memops ||
                           (kind == copy_kind::host_to_device && r.host_pinned);
  for (uint64_t done = 0; done < bytes;) {
    copy_segment s{done, done, bytes - done};
    if (src_dev) {
      vram_byte v = locate(src_va + done);
      r.src_gpu = v.gpu;
      s.src = v.offset;
      s.bytes = std::min(s.bytes, v.left);
    }
    if (dst_dev) {
      vram_byte v = locate(dst_va + done);
      r.dst_gpu = v.gpu;
      s.dst = v.offset;
      s.bytes = std::min(s.bytes, v.left);
    }
    copy_segment* last = r.segments.empty() ? nullptr : &r.segments.back();
    if (last && last->src + last->bytes == s.src && last->dst + last->bytes == s.dst)
      last->bytes += s.bytes;  // adjacent in VRAM on both sides: one piece
    else
      r.segments.push_back(s);
    done += s.bytes;
  }
  // Between two GPUs the copy goes GPU to GPU when the context it runs in has peer access to
  // a live context on the other one.
  if (r.src_gpu >= 0 && r.dst_gpu >= 0 && r.src_gpu != r.dst_gpu) {
    const int other = c->device == r.src_gpu ? r.dst_gpu : r.src_gpu;
    for (const CUctx_st* p : c->peers) r.peer |= p->alive && p->device == other;
  }
  // Submitting work from the CPU orders the RDMA writes landed before it (guide 5.7), on the
  // context's GPU and on those the copy touches.
  rdma_sync(c->device);
  for (int g : {r.src_gpu, r.dst_gpu})
    if (g >= 0 && g != c->device) rdma_sync(g);
  p2psim::kernel::current_os().copies().copy(r);
  return CUDA_SUCCESS;
}

}  // namespace

CUresult cuMemcpyHtoD(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  return issue(copy_kind::host_to_device, dstDevice, nullptr, 0, srcHost, ByteCount, false,
               nullptr);
}
CUresult cuMemcpyDtoH(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  return issue(copy_kind::device_to_host, 0, dstHost, srcDevice, nullptr, ByteCount, false,
               nullptr);
}
CUresult cuMemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  return issue(copy_kind::device_to_device, dstDevice, nullptr, srcDevice, nullptr, ByteCount,
               false, nullptr);
}
CUresult cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                           CUstream hStream) {
  return issue(copy_kind::host_to_device, dstDevice, nullptr, 0, srcHost, ByteCount, true, hStream);
}
CUresult cuMemcpyDtoHAsync(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                           CUstream hStream) {
  return issue(copy_kind::device_to_host, 0, dstHost, srcDevice, nullptr, ByteCount, true, hStream);
}
CUresult cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                           CUstream hStream) {
  return issue(copy_kind::device_to_device, dstDevice, nullptr, srcDevice, nullptr, ByteCount, true,
               hStream);
}

// Untimed: the bytes are in VRAM when the call returns, after the context's earlier work.
CUresult cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  if (CUresult r = check_init()) return r;
  CUctx_st* c = current_context();
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  if (N == 0) return CUDA_SUCCESS;
  if (!device_range(dstDevice, N) && !vmm_accessible(c, dstDevice, N, true))
    return CUDA_ERROR_INVALID_VALUE;
  synchronize_context(c);
  rdma_sync(c->device);
  for (uint64_t done = 0; done < N;) {
    const vram_byte v = locate(dstDevice + done);
    const uint64_t n = std::min<uint64_t>(v.left, N - done);
    drv().gpu(v.gpu).vram->fill(v.offset, n, uc);
    done += n;
  }
  return CUDA_SUCCESS;
}

// ---- streams ----

CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  if (CUresult r = check_init()) return r;
  if (!phStream || (Flags & ~unsigned(CU_STREAM_NON_BLOCKING))) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* c = current_context();
  if (!c) return CUDA_ERROR_INVALID_CONTEXT;
  auto s = std::make_unique<CUstream_st>();
  s->ctx = c;
  *phStream = s.get();
  global().streams.push_back(std::move(s));  // kept as a tombstone once destroyed
  return CUDA_SUCCESS;
}

// Returns at once: work still queued on the stream completes on its own.
CUresult cuStreamDestroy(CUstream hStream) {
  if (CUresult r = check_init()) return r;
  CUstream_st* s = live_stream(hStream);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  s->alive = false;
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream hStream) {
  if (CUresult r = check_init()) return r;
  CUctx_st* c = nullptr;
  if (hStream) {
    CUstream_st* s = live_stream(hStream);
    if (!s) return unusable_stream(hStream);
    c = s->ctx;
  } else if (!(c = current_context())) {  // the NULL stream of the current context
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  p2psim::kernel::current_os().copies().synchronize(
      {p2psim::kernel::current_pid(), c, hStream, false});
  rdma_sync(c->device);
  return CUDA_SUCCESS;
}
