// The probe's dma-buf and CUDA IPC sequences.
//
// `probe --dmabuf`: the CUDA side of dma-buf export, the upstream Linux path that replaces
// nv-p2p (GPUDirect RDMA guide 13.3): cuMemGetHandleForAddressRange(DMA_BUF_FD) before cuInit
// and without a context, the device attributes that announce it, every range a program asks for
// (whole allocations, sub-ranges aligned and not, size 0, past the end, across two allocations,
// freed, host and pageable memory, VMM memory mapped and unmapped), every bad argument, and what
// the file descriptor it returns is (its size, its link and fdinfo, whether two exports of one
// range share a file); what freeing an exported allocation, unmapping or releasing exported VMM
// memory and destroying the context do to the descriptor and to the device's free memory.
//
//
// The helpers both share are in probe_named_memory.h; the IPC sequence is in probe_ipc.cpp.
//
// Nothing that varies run to run is printed: device memory is named after this run's
// allocations ("A4+4096"), buffer IDs as "new" / "same as <first name that had it>", tokens as
// zero / nonzero and as equal or not to the other process's, descriptors as valid / not and
// their dma-buf size against the range asked for. File descriptor numbers, inode numbers, exact
// free-memory deltas and IPC handle bytes go on '#' lines, which the comparison leaves out.
//
// Transcripts from an H200: tests/data/cuda_probe/h200_cuda13_dmabuf.txt and
// tests/data/cuda_probe/h200_cuda13_ipc.txt. The lines below print exactly what those recorded:
// change what a sequence prints only together with a new recording.
#include "probe_dmabuf.h"

namespace cuda_probe {

using namespace named_memory;

int dmabuf_sequence::get(CUdeviceptr p, size_t size, const std::string& why, int type,
                         unsigned long long flags, bool keep) {
  int fd = -77;
  const CUresult r = cuMemGetHandleForAddressRange(&fd, p, size, (CUmemRangeHandleType)type, flags);
  std::string t = type == dma_buf_fd ? std::string("DMA_BUF_FD") : fmt("type=%d", type);
  std::string s =
      fmt("cuMemGetHandleForAddressRange(%s, size=%s, %s, flags=0x%llx)%s -> %s", name(p).c_str(),
          size_name(size).c_str(), t.c_str(), flags, why.c_str(), res(r).c_str());
  if (r != CUDA_SUCCESS) {
    s += fd == -77 ? " handle=unwritten" : fmt(" handle=%d", fd);
    line(s);
    return -1;
  }
  line(s);
  describe(fd, size);
  if (!keep) fd_close(fd);
  return fd;
}

void dmabuf_sequence::describe(int fd, size_t requested, const std::string& what) {
  const int fl = fd_fcntl(fd, F_GETFD);
  if (fl == -1) {
    line(fmt("  %s: valid=no (%s)", what.c_str(), errno_name(errno)));
    return;
  }
  const off_t end = fd_lseek(fd, 0, SEEK_END);
  const int e = errno;
  std::string size_s;
  if (end == (off_t)-1)
    size_s = std::string("failed ") + errno_name(e);
  else if ((size_t)end == requested)
    size_s = fmt("%s (=range)", size_name((size_t)end).c_str());
  else
    size_s = fmt("%s (range %s)", size_name((size_t)end).c_str(), size_name(requested).c_str());
  fd_lseek(fd, 0, SEEK_SET);
  const int ofl = fd_fcntl(fd, F_GETFL);
  line(fmt("  %s: valid=yes cloexec=%s access=%s size=%s", what.c_str(),
           (fl & FD_CLOEXEC) ? "yes" : "no",
           (ofl & O_ACCMODE) == O_RDWR     ? "rdwr"
           : (ofl & O_ACCMODE) == O_RDONLY ? "rdonly"
                                           : "wronly",
           size_s.c_str()));
  // The link: "anon_inode:dmabuf" whole, else the part before ':' ("/dmabuf:" + name).
  std::string l = fd_link(fd);
  if (l.empty()) l = "(readlink failed)";
  std::string shown = l;
  if (l.rfind("anon_inode:", 0) != 0) {
    const size_t colon = l.find(':');
    if (colon != std::string::npos) shown = l.substr(0, colon + 1);
    if (l.rfind("socket:", 0) == 0 || l.rfind("pipe:", 0) == 0) shown = l.substr(0, colon);
  }
  // fdinfo: exp_name and size for the transcript, the rest on a '#' line.
  std::string exp_name = "(none)", info_size = "(none)", info_flags = "(none)", rest;
  const std::string info = fd_info(fd);
  for (size_t at = 0; at < info.size();) {
    size_t eol = info.find('\n', at);
    if (eol == std::string::npos) eol = info.size();
    std::string ln = info.substr(at, eol - at);
    at = eol + 1;
    while (!ln.empty() && ln.back() == '\r') ln.pop_back();
    const size_t c = ln.find(':');
    if (c == std::string::npos) continue;
    std::string k = ln.substr(0, c), v = ln.substr(c + 1);
    while (!v.empty() && (v[0] == '\t' || v[0] == ' ')) v.erase(0, 1);
    if (k == "exp_name")
      exp_name = v;
    else if (k == "size")
      info_size = std::strtoull(v.c_str(), nullptr, 10) == requested
                      ? std::string("=range")
                      : size_name(std::strtoull(v.c_str(), nullptr, 10));
    else if (k == "flags")
      info_flags = v;
    else
      rest += " " + k + "=" + v;
  }
  line(fmt("  %s: link=%s fdinfo exp_name=%s size=%s flags=%s", what.c_str(), shown.c_str(),
           exp_name.c_str(), info_size.c_str(), info_flags.c_str()));
  line(fmt("# %s=%d link=%s ino=%llu fdinfo:%s", what.c_str(), fd, l.c_str(), fd_inode(fd),
           rest.c_str()));
  // Whether it can be mapped by the CPU (never touched if it can).
  if (const int err = fd_mmap_errno(fd))
    line(fmt("  %s: mmap=%s", what.c_str(), errno_name(err)));
  else
    line(fmt("  %s: mmap=ok", what.c_str()));
}

void dmabuf_sequence::dev_attr(int a, const char* n) {
  int v = -77;
  const CUresult r = cuDeviceGetAttribute(&v, (CUdevice_attribute)a, 0);
  std::string s = fmt("cuDeviceGetAttribute(%s=%d, dev 0) -> %s", n, a, res(r).c_str());
  if (r == CUDA_SUCCESS) s += fmt(" value=%d", v);
  line(s);
}

void dmabuf_sequence::before_init() {
  line("== dma-buf before cuInit");
  int fd = -77;
  const CUdeviceptr fake = 0x7f0000000000ull;
  CUresult r =
      cuMemGetHandleForAddressRange(&fd, fake, 2 * MiB, (CUmemRangeHandleType)dma_buf_fd, 0);
  line(fmt("cuMemGetHandleForAddressRange(fake, size=2MiB, DMA_BUF_FD, flags=0x0) -> %s%s",
           res(r).c_str(), fd == -77 ? " handle=unwritten" : fmt(" handle=%d", fd).c_str()));
  r = cuMemGetHandleForAddressRange(&fd, 0, 0, (CUmemRangeHandleType)dma_buf_fd, 0);
  line("cuMemGetHandleForAddressRange(null, size=0, DMA_BUF_FD, flags=0x0) -> " + res(r));
  // Which argument checks come before the initialization check.
  r = cuMemGetHandleForAddressRange(&fd, fake, 2 * MiB, (CUmemRangeHandleType)0, 0);
  line("cuMemGetHandleForAddressRange(fake, size=2MiB, type=0, flags=0x0) -> " + res(r));
  r = cuMemGetHandleForAddressRange(&fd, fake + 100, 2 * MiB, (CUmemRangeHandleType)dma_buf_fd, 0);
  line("cuMemGetHandleForAddressRange(fake+100, size=2MiB, DMA_BUF_FD, flags=0x0) -> " + res(r));
  r = cuMemGetHandleForAddressRange(&fd, fake, 100, (CUmemRangeHandleType)dma_buf_fd, 0);
  line("cuMemGetHandleForAddressRange(fake, size=100, DMA_BUF_FD, flags=0x0) -> " + res(r));
  r = cuMemGetHandleForAddressRange(&fd, fake, 2 * MiB, (CUmemRangeHandleType)dma_buf_fd, 2);
  line("cuMemGetHandleForAddressRange(fake, size=2MiB, DMA_BUF_FD, flags=0x2) -> " + res(r));
  r = cuMemGetHandleForAddressRange(&fd, fake, 2 * MiB, (CUmemRangeHandleType)dma_buf_fd, 1);
  line("cuMemGetHandleForAddressRange(fake, size=2MiB, DMA_BUF_FD, flags=0x1) -> " + res(r));
  r = cuMemGetHandleForAddressRange(nullptr, fake, 2 * MiB, (CUmemRangeHandleType)dma_buf_fd, 0);
  line("cuMemGetHandleForAddressRange(NULL, fake, size=2MiB, DMA_BUF_FD, flags=0x0) -> " + res(r));
  int v = -77;
  r = cuDeviceGetAttribute(&v, (CUdevice_attribute)124, 0);
  line("cuDeviceGetAttribute(DMA_BUF_SUPPORTED=124, dev 0) -> " + res(r));
  line("cuInit(0) -> " + res(cuInit(0)));
  line("== dma-buf without a context");
  CUcontext c = (CUcontext)(uintptr_t)1;
  r = cuCtxGetCurrent(&c);
  line(fmt("cuCtxGetCurrent -> %s ctx=%s", res(r).c_str(), ctx_name(c).c_str()));
  fd = -77;
  r = cuMemGetHandleForAddressRange(&fd, fake, 2 * MiB, (CUmemRangeHandleType)dma_buf_fd, 0);
  line(fmt("cuMemGetHandleForAddressRange(fake, size=2MiB, DMA_BUF_FD, flags=0x0) -> %s%s",
           res(r).c_str(), fd == -77 ? " handle=unwritten" : fmt(" handle=%d", fd).c_str()));
  r = cuMemGetHandleForAddressRange(&fd, 0, 2 * MiB, (CUmemRangeHandleType)dma_buf_fd, 0);
  line("cuMemGetHandleForAddressRange(null, size=2MiB, DMA_BUF_FD, flags=0x0) -> " + res(r));
  r = cuMemGetHandleForAddressRange(&fd, fake + 100, 2 * MiB, (CUmemRangeHandleType)dma_buf_fd, 0);
  line("cuMemGetHandleForAddressRange(fake+100, size=2MiB, DMA_BUF_FD, flags=0x0) -> " + res(r));
  r = cuMemGetHandleForAddressRange(&fd, fake, 2 * MiB, (CUmemRangeHandleType)dma_buf_fd, 2);
  line("cuMemGetHandleForAddressRange(fake, size=2MiB, DMA_BUF_FD, flags=0x2) -> " + res(r));
}

void dmabuf_sequence::device_attributes() {
  line("== device attributes");
  dev_attr(124, "DMA_BUF_SUPPORTED");
  dev_attr(146, "HOST_ALLOC_DMA_BUF_SUPPORTED");
  dev_attr(116, "GPU_DIRECT_RDMA_SUPPORTED");
  dev_attr(110, "GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED");
  dev_attr(117, "GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS");
  dev_attr(118, "GPU_DIRECT_RDMA_WRITES_ORDERING");
  dev_attr(98, "CAN_FLUSH_REMOTE_WRITES");
  dev_attr(102, "VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED");
  dev_attr(103, "HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED");
  dev_attr(128, "HANDLE_TYPE_FABRIC_SUPPORTED");
  dev_attr(119, "MEMPOOL_SUPPORTED_HANDLE_TYPES");
  dev_attr(125, "IPC_EVENT_SUPPORTED");
  dev_attr(41, "UNIFIED_ADDRESSING");
  dev_attr(99, "HOST_REGISTER_SUPPORTED");
  dev_attr(91, "CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM");
  dev_attr(100, "PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES");
  line("cuCtxCreate D -> " + res(ctx_create(&m_d, 0, 0)));
  m_ctx.push_back({"D", m_d});
}

void dmabuf_sequence::whole_allocations() {
  line("== whole cuMemAlloc allocations");
  const CUdeviceptr a2 = alloc("A2", 2 * MiB);
  attr(a_allowed_handle_types, a2, " before export");
  attr(a_gdr, a2, " before export");
  attr(a_legacy_ipc, a2, " before export");
  const int fd = get(a2, 2 * MiB, "", dma_buf_fd, 0, true);
  attr(a_allowed_handle_types, a2, " after export");
  attr(a_gdr, a2, " after export");
  attr(a_legacy_ipc, a2, " after export");
  attr(a_range_size, a2, " after export");
  attr(a_buffer_id, a2, " after export");
  // The same range again: another descriptor; the same dma-buf file or another?
  const int fd2 = get(a2, 2 * MiB, " again", dma_buf_fd, 0, true);
  if (fd >= 0 && fd2 >= 0)
    line(fmt("  second export: fd %s, file %s", fd2 != fd ? "differs" : "same",
             ino(fd) == ino(fd2) ? "same" : "differs"));
  if (fd >= 0) fd_close(fd);
  if (fd2 >= 0) fd_close(fd2);
  const CUdeviceptr a4 = alloc("A4", 4 * MiB);
  get(a4, 4 * MiB);
  const CUdeviceptr a64 = alloc("A64", 64 * MiB);
  get(a64, 64 * MiB);
  // A sub-allocated one: cuMemAlloc packs small allocations into 2 MiB chunks.
  const CUdeviceptr p0 = alloc("P0", 64 * KiB);
  const CUdeviceptr p1 = alloc("P1", 64 * KiB);
  const CUdeviceptr q = alloc("Q", 100);
  const CUdeviceptr q2 = alloc("Q2", 100);
  if (p0) get(p0, 64 * KiB);
  if (p1) get(p1, 64 * KiB);
  if (p0) get(p0, 128 * KiB, " (P0 and P1)");
  if (q) {
    get(q, 100);
    get(q, page, " (past Q's 100 bytes)");
  }
  if (q2) get(q2, page);
  if (q2) get(q2 / page * page, page, " (the page holding Q2)");
  if (p0) get(p0, 2 * MiB, " (P0's whole chunk)");
}

void dmabuf_sequence::sub_ranges() {
  line("== sub-ranges of A4 (4 MiB)");
  const CUdeviceptr a4 = at("A4");
  get(a4 + 64 * KiB, 64 * KiB);
  get(a4 + 4 * KiB, 4 * KiB);
  get(a4 + 4 * KiB, 64 * KiB);
  get(a4 + 2 * MiB, 2 * MiB, " (second half)");
  get(a4 + 2 * MiB - 4 * KiB, 8 * KiB, " (across its 2 MiB pages)");
  get(a4, 2 * MiB + 4 * KiB);
  get(a4 + 4 * MiB - 4 * KiB, 4 * KiB, " (last page)");
  line("-- start not page aligned");
  get(a4 + 100, page);
  get(a4 + 512, page);
  get(a4 + 2048, page);
  get(a4 + 100, page - 100);
  line("-- size not page aligned");
  get(a4, page + 1);
  get(a4, 100);
  get(a4, page - 1);
  get(a4, 2 * MiB - 1);
  get(a4, 1);
  line("-- size 0");
  get(a4, 0);
  get(at("A2"), 0);
}

void dmabuf_sequence::past_the_end() {
  line("== ranges past an allocation's end");
  const CUdeviceptr a2 = at("A2"), a4 = at("A4"), a64 = at("A64");
  get(a2, 4 * MiB);
  get(a2, 2 * MiB + page);
  get(a2 + 2 * MiB - page, 2 * page);
  get(a2 + 2 * MiB, page, " (one past the end)");
  get(a4, 8 * MiB);
  get(a64, 64 * MiB + page);
  get(a64 + 64 * MiB - page, page);
  get(a64, 128 * MiB);
  get(a64, ~(size_t)0 & ~(page - 1), " (huge size)");
  get(a64 + 32 * MiB, (size_t)1 << 40, " (1 TiB)");
}

void dmabuf_sequence::across_allocations() {
  line("== ranges across two allocations");
  const CUdeviceptr s0 = alloc("S0", 2 * MiB);
  const CUdeviceptr s1 = alloc("S1", 2 * MiB);
  if (!s0 || !s1) return;
  line(fmt("  S1 %s", s1 == s0 + 2 * MiB   ? "follows S0 directly"
                      : s0 == s1 + 2 * MiB ? "lies directly below S0"
                                           : "is not adjacent to S0"));
  get(s0, 4 * MiB);
  get(s0 + 2 * MiB - page, 2 * page);
  get(s1, 2 * MiB);
  const CUdeviceptr t0 = alloc("T0", 4 * MiB);
  const CUdeviceptr t1 = alloc("T1", 2 * MiB);
  if (t0 && t1 && t1 == t0 + 4 * MiB) get(t0 + 2 * MiB, 4 * MiB, " (T0's second half and T1)");
  if (t0 && t1 && t1 != t0 + 4 * MiB) line("  T1 is not adjacent to T0");
}

void dmabuf_sequence::freed_and_host() {
  line("== freed memory, host memory, pageable memory");
  const CUdeviceptr f = alloc("F", 2 * MiB);
  free_("F");
  get(f, 2 * MiB, " (freed)");
  get(f + 64 * KiB, 64 * KiB, " (freed)");
  // Pinned host memory: cuMemHostAlloc, cuMemAllocHost, and the device pointer of a mapped one.
  void* h = nullptr;
  CUresult r = cuMemHostAlloc(&h, 64 * KiB, 0);
  line(fmt("cuMemHostAlloc(size=64KiB, flags=0x0) -> %s H align=%s", res(r).c_str(),
           h && (uintptr_t)h % page == 0 ? "page" : "below_page"));
  if (r == CUDA_SUCCESS) {
    add("H", (CUdeviceptr)(uintptr_t)h, 64 * KiB);
    get((CUdeviceptr)(uintptr_t)h, 64 * KiB);
    get((CUdeviceptr)(uintptr_t)h, 64 * KiB, "", dma_buf_fd, mapping_type_pcie);
    get((CUdeviceptr)(uintptr_t)h + page, page);
    attr(a_allowed_handle_types, (CUdeviceptr)(uintptr_t)h);
  }
  void* hm = nullptr;
  r = cuMemHostAlloc(&hm, 64 * KiB, 0x2 /* DEVICEMAP */);
  line("cuMemHostAlloc(size=64KiB, flags=0x2) -> " + res(r) + " HM");
  if (r == CUDA_SUCCESS) {
    add("HM", (CUdeviceptr)(uintptr_t)hm, 64 * KiB);
    CUdeviceptr d = 0;
    r = cuMemHostGetDevicePointer(&d, hm, 0);
    line(fmt("cuMemHostGetDevicePointer(HM) -> %s dptr=%s", res(r).c_str(),
             d == (CUdeviceptr)(uintptr_t)hm ? "=host" : "other"));
    if (r == CUDA_SUCCESS) get(d, 64 * KiB, " (HM's device pointer)");
  }
  void* ha = nullptr;
  r = cuMemAllocHost(&ha, 64 * KiB);
  line("cuMemAllocHost(size=64KiB) -> " + res(r) + " HA");
  if (r == CUDA_SUCCESS) {
    add("HA", (CUdeviceptr)(uintptr_t)ha, 64 * KiB);
    get((CUdeviceptr)(uintptr_t)ha, 64 * KiB);
  }
  // Pageable memory, then the same memory registered with cuMemHostRegister.
  void* pg = nullptr;
  if (posix_memalign(&pg, page, 64 * KiB) == 0) {
    std::memset(pg, 0, 64 * KiB);
    add("U", (CUdeviceptr)(uintptr_t)pg, 64 * KiB);
    line("# U: pageable, posix_memalign(alignment=4096, size=64KiB)");
    get((CUdeviceptr)(uintptr_t)pg, 64 * KiB, " (pageable)");
    r = cuMemHostRegister(pg, 64 * KiB, 0);
    line("cuMemHostRegister(U, size=64KiB, flags=0x0) -> " + res(r));
    get((CUdeviceptr)(uintptr_t)pg, 64 * KiB, " (registered)");
    if (r == CUDA_SUCCESS) line("cuMemHostUnregister(U) -> " + res(cuMemHostUnregister(pg)));
  }
  // A stack address and an address nothing holds.
  int local = 0;
  const CUdeviceptr stack = (CUdeviceptr)(uintptr_t)&local / page * page;
  add("stack", stack, page);
  get(stack, page, " (stack)");
  get(0x7f0000000000ull, 2 * MiB, " (nothing there: fake)");
  if (h) line("cuMemFreeHost(H) -> " + res(cuMemFreeHost(h)));
  if (hm) line("cuMemFreeHost(HM) -> " + res(cuMemFreeHost(hm)));
  if (ha) line("cuMemFreeHost(HA) -> " + res(cuMemFreeHost(ha)));
}

void dmabuf_sequence::bad_arguments() {
  line("== arguments");
  const CUdeviceptr a2 = at("A2");
  get(0, 2 * MiB, " (null dptr)");
  get(0, 0, " (null dptr)");
  get(a2, 2 * MiB, "", 0);
  get(a2, 2 * MiB, "", 2);
  get(a2, 2 * MiB, "", 3);
  get(a2, 2 * MiB, "", 0x7fffffff);
  get(a2, 2 * MiB, "", -1);
  get(a2, 2 * MiB, " (MAPPING_TYPE_PCIE)", dma_buf_fd, mapping_type_pcie);
  get(a2 + 64 * KiB, 64 * KiB, " (MAPPING_TYPE_PCIE)", dma_buf_fd, mapping_type_pcie);
  get(a2, 2 * MiB, "", dma_buf_fd, 2);
  get(a2, 2 * MiB, "", dma_buf_fd, 3);
  get(a2, 2 * MiB, "", dma_buf_fd, 4);
  get(a2, 2 * MiB, "", dma_buf_fd, 6);
  get(a2, 2 * MiB, "", dma_buf_fd, 7);
  get(a2, 2 * MiB, "", dma_buf_fd, 0x100);
  get(a2, 2 * MiB, "", dma_buf_fd, 1ull << 32);
  get(a2, 0, " (null dptr check first?)", 0, 2);
  get(0, 2 * MiB, " (which check first?)", 0, 0);
  get(a2 + 100, 2 * MiB, " (which check first?)", 0, 0);
  get(a2 + 100, 2 * MiB, " (which check first?)", dma_buf_fd, 2);
  get(a2, 100, " (which check first?)", dma_buf_fd, 2);
  get(at("F"), 2 * MiB, " (which check first?)", dma_buf_fd, 2);
  // With no context current, on live memory of D.
  CUcontext popped = nullptr;
  CUresult r = cuCtxPopCurrent(&popped);
  line(fmt("cuCtxPopCurrent -> %s ctx=%s", res(r).c_str(), ctx_name(popped).c_str()));
  get(a2, 2 * MiB, " without context");
  get(a2 + 64 * KiB, 64 * KiB, " without context");
  attr(a_allowed_handle_types, a2, " without context");
  line("cuCtxPushCurrent(D) -> " + res(cuCtxPushCurrent(m_d)));
  // In a second context: memory of D.
  CUcontext e = nullptr;
  line("cuCtxCreate D2 -> " + res(ctx_create(&e, 0, 0)));
  m_ctx.push_back({"D2", e});
  get(a2, 2 * MiB, " in D2");
  line("cuCtxDestroy(D2) -> " + res(cuCtxDestroy(e)));
  line("cuCtxSetCurrent(D) -> " + res(cuCtxSetCurrent(m_d)));
}

void dmabuf_sequence::freeing_exported() {
  line("== freeing exported cuMemAlloc memory");
  // Baseline: what a free of 64 MiB does to the device's free memory without an export.
  size_t before = free_memory();
  alloc("B0", 64 * MiB);
  memory_moved(before, "after cuMemAlloc(B0)", 64 * MiB);
  before = free_memory();
  free_("B0", " (never exported)");
  memory_moved(before, "after cuMemFree(B0)", 64 * MiB);
  // Exported, then freed while the descriptor is open.
  const CUdeviceptr k = alloc("K", 64 * MiB);
  {
    std::vector<unsigned char> buf(64 * MiB);
    fill(buf.data(), buf.size(), 5);
    line("cuMemcpyHtoD(K, 64MiB) -> " + res(cuMemcpyHtoD(k, buf.data(), buf.size())));
  }
  const int fd = get(k, 64 * MiB, "", dma_buf_fd, 0, true);
  const int fd_sub = get(k + 32 * MiB, 4 * MiB, "", dma_buf_fd, 0, true);
  before = free_memory();
  free_("K", " (exported, descriptors open)");
  memory_moved(before, "after cuMemFree(K)", 64 * MiB);
  if (fd >= 0) describe(fd, 64 * MiB, "fd of K");
  if (fd_sub >= 0) describe(fd_sub, 4 * MiB, "fd of K+32MiB");
  get(k, 64 * MiB, " (freed, still exported)");
  attr(a_memory_type, k, " (freed, still exported)");
  // A new allocation of the same size: does it take K's VA while K's dma-buf lives?
  before = free_memory();
  const CUdeviceptr k2 = alloc("K2", 64 * MiB);
  memory_moved(before, "after cuMemAlloc(K2)", 64 * MiB);
  if (k2) get(k2, 64 * MiB);
  before = free_memory();
  if (fd >= 0) line(fmt("close(fd of K) -> %d", fd_close(fd)));
  memory_moved(before, "after close(fd of K)", 64 * MiB);
  before = free_memory();
  if (fd_sub >= 0) line(fmt("close(fd of K+32MiB) -> %d", fd_close(fd_sub)));
  memory_moved(before, "after close(fd of K+32MiB)", 64 * MiB);
  if (k2) free_("K2");
  // Closed first, then freed.
  const CUdeviceptr j = alloc("J", 64 * MiB);
  const int fj = get(j, 64 * MiB, "", dma_buf_fd, 0, true);
  if (fj >= 0) line(fmt("close(fd of J) -> %d", fd_close(fj)));
  before = free_memory();
  free_("J", " (export closed)");
  memory_moved(before, "after cuMemFree(J)", 64 * MiB);
  attr(a_allowed_handle_types, at("A2"), " (A2 after its exports were closed)");
}

void dmabuf_sequence::destroyed_context() {
  line("== context destroyed while an export is open");
  // Free memory is measured from before E is created: E's own memory comes back with it.
  size_t before = free_memory();
  CUcontext e = nullptr;
  line("cuCtxCreate E -> " + res(ctx_create(&e, 0, 0)));
  m_ctx.push_back({"E", e});
  const CUdeviceptr x = alloc("X", 64 * MiB);
  const int fd = x ? get(x, 64 * MiB, "", dma_buf_fd, 0, true) : -1;
  line("cuCtxDestroy(E) -> " + res(cuCtxDestroy(e)));
  line("cuCtxSetCurrent(D) -> " + res(cuCtxSetCurrent(m_d)));
  memory_moved(before, "after cuCtxDestroy(E), against before cuCtxCreate(E)", 64 * MiB);
  if (fd >= 0) describe(fd, 64 * MiB, "fd of X");
  before = free_memory();
  if (fd >= 0) line(fmt("close(fd of X) -> %d", fd_close(fd)));
  memory_moved(before, "after close(fd of X)", 64 * MiB);
}

void dmabuf_sequence::null_handle() {
  // Last: a driver that wrote through NULL would end the program here.
  line("== NULL handle pointer");
  const CUdeviceptr a2 = at("A2");
  line("cuMemGetHandleForAddressRange(NULL, A2, size=2MiB, DMA_BUF_FD, flags=0x0) -> " +
       res(cuMemGetHandleForAddressRange(nullptr, a2, 2 * MiB, (CUmemRangeHandleType)dma_buf_fd,
                                         0)));
  line("cuMemGetHandleForAddressRange(NULL, A2, size=2MiB, type=0, flags=0x0) -> " +
       res(cuMemGetHandleForAddressRange(nullptr, a2, 2 * MiB, (CUmemRangeHandleType)0, 0)));
  line("cuMemGetHandleForAddressRange(NULL, A2+100, size=2MiB, DMA_BUF_FD, flags=0x0) -> " +
       res(cuMemGetHandleForAddressRange(nullptr, a2 + 100, 2 * MiB,
                                         (CUmemRangeHandleType)dma_buf_fd, 0)));
}

void dmabuf_sequence::run() {
  before_init();
  device_attributes();
  whole_allocations();
  sub_ranges();
  past_the_end();
  across_allocations();
  freed_and_host();
  bad_arguments();
  freeing_exported();
  vmm();
  destroyed_context();
  null_handle();
  line("cuCtxDestroy(D) -> " + res(cuCtxDestroy(m_d)));
  line("== end");
}

void run_dmabuf(const sink& out) {
  dmabuf_sequence s(out);
  s.run();
}

}  // namespace cuda_probe
