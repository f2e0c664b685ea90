// The probe's sequences, one section each: what they call and what they print (probe.h).
#include "probe.h"

namespace cuda_probe {

void probe::before_init() {
  line("== before cuInit");
  int v = 0;
  CUresult r = cuDriverGetVersion(&v);
  // The exact number differs (model: the CUDA 12.2 API level it implements; H100: 13.0).
  line(
      fmt("cuDriverGetVersion -> %s version>=12020:%s", res(r).c_str(), v >= 12020 ? "yes" : "no"));
  line("cuDriverGetVersion(NULL) -> " + res(cuDriverGetVersion(nullptr)));
  const char* name = nullptr;
  r = cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &name);
  line(fmt("cuGetErrorName(1) -> %s %s", res(r).c_str(), name ? name : "(null)"));
  int n = -1;
  line("cuDeviceGetCount -> " + res(cuDeviceGetCount(&n)));
  CUdevice d = -1;
  line("cuDeviceGet(0) -> " + res(cuDeviceGet(&d, 0)));
  line("cuDeviceGetAttribute(116) -> " + res(cuDeviceGetAttribute(&n, (CUdevice_attribute)116, 0)));
  CUcontext c = nullptr;
  line("cuCtxCreate(0) -> " + res(ctx_create(&c, 0, 0)));
  line("cuCtxGetCurrent -> " + res(cuCtxGetCurrent(&c)));
  CUdeviceptr p = 0;
  line("cuMemAlloc(4096) -> " + res(cuMemAlloc(&p, 4096)));
  line("cuMemFree(0) -> " + res(cuMemFree(0)));
  unsigned long long id = 0;
  line("cuPointerGetAttribute(7, stack) -> " +
       res(cuPointerGetAttribute(&id, (CUpointer_attribute)7, (CUdeviceptr)(uintptr_t)&id)));
  line("cuInit(1) -> " + res(cuInit(1)));
  line("cuInit(0) -> " + res(cuInit(0)));
  line("cuInit(0) again -> " + res(cuInit(0)));
}

void probe::devices() {
  line("== devices");
  int n = -1;
  CUresult r = cuDeviceGetCount(&n);
  line(fmt("cuDeviceGetCount -> %s count=%d", res(r).c_str(), n));
  line("cuDeviceGetCount(NULL) -> " + res(cuDeviceGetCount(nullptr)));
  CUdevice d = -1;
  r = cuDeviceGet(&d, 0);
  line(fmt("cuDeviceGet(0) -> %s dev=%d", res(r).c_str(), d));
  line("cuDeviceGet(1) -> " + res(cuDeviceGet(&d, 1)));
  line("cuDeviceGet(-1) -> " + res(cuDeviceGet(&d, -1)));
  const int attrs[] = {18, 41, 83, 110, 116, 117, 118, 124, 9999, -1};
  for (int a : attrs) {
    int v = -12345;
    r = cuDeviceGetAttribute(&v, (CUdevice_attribute)a, 0);
    std::string s = fmt("cuDeviceGetAttribute(%d, dev=0) -> %s", a, res(r).c_str());
    if (r == CUDA_SUCCESS) s += fmt(" value=%d", v);
    line(s);
  }
  int v = 0;
  line("cuDeviceGetAttribute(116, dev=1) -> " +
       res(cuDeviceGetAttribute(&v, (CUdevice_attribute)116, 1)));
  line("cuDeviceGetAttribute(NULL, 116) -> " +
       res(cuDeviceGetAttribute(nullptr, (CUdevice_attribute)116, 0)));
  char name[256] = {};
  r = cuDeviceGetName(name, sizeof name, 0);
  line(fmt("cuDeviceGetName -> %s nonempty=%s", res(r).c_str(), name[0] ? "yes" : "no"));
  // Not probed: cuDeviceGetName(name, 0, dev) crashes libcuda 580 (SIGSEGV).
  size_t total = 0;
  r = cuDeviceTotalMem(&total, 0);
  // The size is the machine's (80 GB on an H100, what the test configures in p2psim).
  line(fmt("cuDeviceTotalMem -> %s nonzero=%s", res(r).c_str(), total ? "yes" : "no"));
  line("cuDeviceTotalMem(dev=1) -> " + res(cuDeviceTotalMem(&total, 1)));
  CUuuid u;
  std::memset(&u, 0, sizeof u);
  r = cuDeviceGetUuid(&u, 0);
  bool nonzero = false;
  for (char b : u.bytes) nonzero |= b != 0;
  line(fmt("cuDeviceGetUuid -> %s nonzero=%s", res(r).c_str(), nonzero ? "yes" : "no"));
  const int results[] = {0,   1,   2,   3,   4,   100, 101, 201, 400,
                         500, 600, 700, 709, 800, 801, 999, 9999};
  for (int e : results) {
    const char* s = nullptr;
    r = cuGetErrorName((CUresult)e, &s);
    line(fmt("cuGetErrorName(%d) -> %s %s", e, res(r).c_str(), s ? s : "(null)"));
  }
}

void probe::contexts() {
  line("== contexts");
  CUcontext c = (CUcontext)(uintptr_t)1;
  CUresult r = cuCtxGetCurrent(&c);
  line(fmt("cuCtxGetCurrent -> %s ctx=%s", res(r).c_str(), ctx_name(c).c_str()));
  const unsigned bad[] = {0x03, 0x06, 0x100, 0xFFFFFFFFu};
  for (unsigned f : bad) {
    CUcontext x = nullptr;
    r = ctx_create(&x, f, 0);
    line(fmt("cuCtxCreate(flags=0x%x) -> %s", f, res(r).c_str()));
    if (r == CUDA_SUCCESS) cuCtxDestroy(x);
  }
  line("cuCtxCreate(NULL) -> " + res(ctx_create(nullptr, 0, 0)));
  CUcontext x = nullptr;
  line("cuCtxCreate(dev=1) -> " + res(ctx_create(&x, 0, 1)));
  CUcontext a = nullptr;
  r = ctx_create(&a, 0, 0);
  m_ctx.push_back({"A", a});
  line("cuCtxCreate(flags=0) A -> " + res(r));
  r = cuCtxGetCurrent(&c);
  line(fmt("cuCtxGetCurrent -> %s ctx=%s", res(r).c_str(), ctx_name(c).c_str()));
  // A second context is made current; destroying it: what is current afterwards?
  CUcontext b = nullptr;
  r = ctx_create(&b, 0x80, 0);
  m_ctx.push_back({"B", b});
  line("cuCtxCreate(flags=0x80) B -> " + res(r));
  r = cuCtxGetCurrent(&c);
  line(fmt("cuCtxGetCurrent -> %s ctx=%s", res(r).c_str(), ctx_name(c).c_str()));
  line("cuCtxDestroy(B) -> " + res(cuCtxDestroy(b)));
  r = cuCtxGetCurrent(&c);
  line(fmt("cuCtxGetCurrent after destroying current B -> %s ctx=%s", res(r).c_str(),
           ctx_name(c).c_str()));
  line("cuCtxSetCurrent(NULL) -> " + res(cuCtxSetCurrent(nullptr)));
  CUdeviceptr p = 0;
  line("cuMemAlloc(256) without context -> " + res(cuMemAlloc(&p, 256)));
  line("cuCtxSynchronize without context -> " + res(cuCtxSynchronize()));
  r = cuCtxGetCurrent(&c);
  line(fmt("cuCtxGetCurrent -> %s ctx=%s", res(r).c_str(), ctx_name(c).c_str()));
  line("cuCtxSetCurrent(A) -> " + res(cuCtxSetCurrent(a)));
  line("cuCtxSynchronize -> " + res(cuCtxSynchronize()));
}

void probe::allocations() {
  line("== cuMemAlloc sizes");
  const size_t sizes[] = {1,
                          255,
                          256,
                          257,
                          512,
                          4 * KiB,
                          64 * KiB - 1,
                          64 * KiB,
                          64 * KiB + 1,
                          1 * MiB,
                          2 * MiB,
                          2 * MiB + 1,
                          100 * MiB,
                          1,
                          1,
                          1};
  for (size_t s : sizes) alloc(s);
  // Packing: 40 more small ones in a row.
  for (int i = 0; i < 8; ++i) alloc(1000);
  for (int i = 0; i < 4; ++i) alloc(64 * KiB);
  for (int i = 0; i < 4; ++i) alloc(600 * KiB);
  for (int i = 0; i < 3; ++i) alloc(3 * MiB);
  CUdeviceptr p = 0;
  line("cuMemAlloc(size=0) -> " + res(cuMemAlloc(&p, 0)));
  line("cuMemAlloc(NULL, 256) -> " + res(cuMemAlloc(nullptr, 256)));
  line("cuMemAlloc(size=2^50) -> " + res(cuMemAlloc(&p, size_t(1) << 50)));
}

void probe::reuse() {
  line("== VA reuse");
  fresh_context("R");
  const int a = alloc(4096, " a"), b = alloc(4096, " b"), c = alloc(4096, " c");
  free_(c);
  alloc(4096, " after free of last");
  free_(b);
  alloc(4096, " after free of middle");
  alloc(4096, " next");
  (void)a;
  // A freed 1000-byte hole (1024 reserved) takes two 500-byte ones; a bigger one goes after.
  int h[4];
  for (int i = 0; i < 4; ++i) h[i] = alloc(1000, " hole row");
  free_(h[1]);
  alloc(500, " into hole");
  alloc(500, " into hole");
  alloc(2000, " bigger than hole");
  const int big = alloc(8 * MiB, " big");
  free_(big);
  alloc(8 * MiB, " after free of big");
  const int m = alloc(2 * MiB, " 2MiB");
  free_(m);
  alloc(4096, " small after free of 2MiB");
}

void probe::pointer_attributes() {
  line("== pointer attributes");
  fresh_context("P");
  const int k = alloc(10000, " target");
  const int after = alloc(256, " neighbour");
  (void)after;
  const CUdeviceptr base = m_allocs[k].va;
  int local = 0;
  void* heap = std::malloc(4096);
  m_host = (CUdeviceptr)(uintptr_t)heap;
  m_stack = (CUdeviceptr)(uintptr_t)&local;
  const int freed = alloc(10000, " to free");
  const int big = alloc(1 * MiB, " big target");
  free_(freed);
  const CUdeviceptr bigbase = m_allocs[big].va;
  struct where {
    CUdeviceptr p;
    std::string name;
  } places[] = {
      {base, "#" + std::to_string(k)},
      {base + 5000, "#" + std::to_string(k) + "+5000"},
      {base + 9999, "#" + std::to_string(k) + "+9999 (last byte)"},
      {bigbase + MiB, "#" + std::to_string(big) + "+1MiB (one past end)"},
      {m_allocs[freed].va, "#" + std::to_string(freed) + " (freed)"},
      {m_host, "host malloc"},
      {m_stack, "stack"},
      {0, "NULL"},
  };
  for (const where& w : places)
    for (int attr = 1; attr <= 15; ++attr)
      if (attr != 5) get_attr(attr, w.p, w.name);  // tokens below: reading them has effects
  get_attr(9999, base, "#" + std::to_string(k));
  for (const where& w : places) get_attrs(w.p, w.name);
  line("cuPointerGetAttribute(NULL data) -> " +
       res(cuPointerGetAttribute(nullptr, (CUpointer_attribute)7, base)));
  std::free(heap);
}

void probe::sync_memops() {
  line("== SYNC_MEMOPS and P2P_TOKENS");
  fresh_context("S");
  const int a = alloc(4096, " a"), b = alloc(4096, " b");
  const CUdeviceptr pa = m_allocs[a].va, pb = m_allocs[b].va;
  const std::string na = "#" + std::to_string(a), nb = "#" + std::to_string(b);
  get_attr(6, pa, na);
  unsigned int one = 1, zero = 0, two = 2;
  line("cuPointerSetAttribute(6, 1, " + na + "+100) -> " +
       res(cuPointerSetAttribute(&one, (CUpointer_attribute)6, pa + 100)));
  get_attr(6, pa, na);
  get_attr(6, pb, nb + " (same chunk)");
  line("cuPointerSetAttribute(6, 2, " + na + ") -> " +
       res(cuPointerSetAttribute(&two, (CUpointer_attribute)6, pa)));
  get_attr(6, pa, na);
  line("cuPointerSetAttribute(6, 0, " + na + ") -> " +
       res(cuPointerSetAttribute(&zero, (CUpointer_attribute)6, pa)));
  get_attr(6, pa, na);
  line("cuPointerSetAttribute(7, " + na + ") -> " +
       res(cuPointerSetAttribute(&one, (CUpointer_attribute)7, pa)));
  line("cuPointerSetAttribute(6, NULL value) -> " +
       res(cuPointerSetAttribute(nullptr, (CUpointer_attribute)6, pa)));
  int local = 0;
  line("cuPointerSetAttribute(6, stack) -> " +
       res(cuPointerSetAttribute(&one, (CUpointer_attribute)6, (CUdeviceptr)(uintptr_t)&local)));
  // P2P tokens, then whether reading them turned SYNC_MEMOPS on (guide 5.7's legacy path).
  get_attr(5, pb, nb);
  get_attr(6, pb, nb + " after tokens");
  get_attr(5, pb + 10, nb + "+10");
  get_attr(5, (CUdeviceptr)(uintptr_t)&local, "stack");
  const int c = alloc(4096, " c");
  free_(c);
  line("cuPointerSetAttribute(6, freed) -> " +
       res(cuPointerSetAttribute(&one, (CUpointer_attribute)6, m_allocs[c].va)));
  get_attr(5, m_allocs[c].va, "#" + std::to_string(c) + " (freed)");
}

void probe::address_range_and_free() {
  line("== cuMemGetAddressRange and cuMemFree");
  fresh_context("G");
  const int k = alloc(3000, " x");
  const int big = alloc(4 * MiB, " y");
  const CUdeviceptr p = m_allocs[k].va, q = m_allocs[big].va;
  const std::string n = "#" + std::to_string(k), nq = "#" + std::to_string(big);
  range(p, n);
  range(p + 1234, n + "+1234");
  range(p + 2999, n + "+2999");
  range(p + 3000, n + "+3000 (end)");
  range(q + 4 * MiB - 1, nq + " last byte");
  range(q + 4 * MiB, nq + " end");
  CUresult r = cuMemGetAddressRange(nullptr, nullptr, p + 7);
  line("cuMemGetAddressRange(NULL, NULL, " + n + "+7) -> " + res(r));
  int local = 0;
  range((CUdeviceptr)(uintptr_t)&local, "stack");
  range(0, "NULL");
  line("cuMemFree(" + n + "+16) -> " + res(cuMemFree(p + 16)));
  range(p, n + " after interior free");
  free_(k);
  range(p, n + " (freed)");
  range(p + 100, n + "+100 (freed)");
  line("cuMemFree(" + n + ") again -> " + res(cuMemFree(p)));
  line("cuMemFree(0) -> " + res(cuMemFree(0)));
  line("cuMemFree(stack) -> " + res(cuMemFree((CUdeviceptr)(uintptr_t)&local)));
  free_(big);
  range(q + MiB, nq + "+1MiB (freed)");
}

void probe::copies() {
  line("== copies");
  fresh_context("M");
  const int a = alloc(4096, " a"), b = alloc(4096, " b");
  const CUdeviceptr pa = m_allocs[a].va, pb = m_allocs[b].va;
  unsigned char src[8192], dst[8192];
  for (int i = 0; i < 8192; ++i) src[i] = (unsigned char)(i * 7 + 1);
  std::memset(dst, 0, sizeof dst);
  line("cuMemcpyHtoD(a, 4096) -> " + res(cuMemcpyHtoD(pa, src, 4096)));
  line("cuMemcpyDtoD(b, a, 4096) -> " + res(cuMemcpyDtoD(pb, pa, 4096)));
  CUresult r = cuMemcpyDtoH(dst, pb, 4096);
  line(fmt("cuMemcpyDtoH(b, 4096) -> %s equal=%s", res(r).c_str(),
           std::memcmp(src, dst, 4096) == 0 ? "yes" : "no"));
  line("cuMemcpyHtoD(a+4000, 96) -> " + res(cuMemcpyHtoD(pa + 4000, src, 96)));
  // Ranges that leave the allocation: into the adjacent one, and past the chunk's last one.
  line("cuMemcpyHtoD(a+4000, 200) into b -> " + res(cuMemcpyHtoD(pa + 4000, src, 200)));
  line("cuMemcpyDtoH(a+4000, 200) into b -> " + res(cuMemcpyDtoH(dst, pa + 4000, 200)));
  line("cuMemcpyDtoD(b, a+100, 4096) -> " + res(cuMemcpyDtoD(pb, pa + 100, 4096)));
  line("cuMemcpyHtoD(b+4000, 200) past the last -> " + res(cuMemcpyHtoD(pb + 4000, src, 200)));
  line("cuMemcpyHtoD(a, 0 bytes) -> " + res(cuMemcpyHtoD(pa, src, 0)));
  const int c = alloc(4096, " c");
  free_(c);
  line("cuMemcpyHtoD(freed, 16) -> " + res(cuMemcpyHtoD(m_allocs[c].va, src, 16)));
  line("cuMemcpyDtoH(freed, 16) -> " + res(cuMemcpyDtoH(dst, m_allocs[c].va, 16)));
  line("cuCtxSynchronize -> " + res(cuCtxSynchronize()));
}

// Pinned host memory: what the copy probes of tools/hw_probe copy through.
void probe::host_memory() {
  line("== pinned host memory");
  fresh_context("H");
  void* h = nullptr;
  line("cuMemAllocHost(NULL, 4096) -> " + res(cuMemAllocHost(nullptr, 4096)));
  line("cuMemAllocHost(size=0) -> " + res(cuMemAllocHost(&h, 0)));
  h = nullptr;
  CUresult r = cuMemAllocHost(&h, 8192);
  line(fmt("cuMemAllocHost(8192) -> %s null=%s", res(r).c_str(), h ? "no" : "yes"));
  if (r != CUDA_SUCCESS) return;
  auto* bytes = static_cast<unsigned char*>(h);
  for (int i = 0; i < 8192; ++i) bytes[i] = (unsigned char)(i * 5 + 3);
  const int a = alloc(8192, " a");
  const CUdeviceptr pa = m_allocs[a].va;
  line("cuMemcpyHtoD(a, pinned, 8192) -> " + res(cuMemcpyHtoD(pa, h, 8192)));
  std::vector<unsigned char> want(bytes, bytes + 8192);
  std::memset(h, 0, 8192);
  r = cuMemcpyDtoH(h, pa, 8192);
  line(fmt("cuMemcpyDtoH(pinned, a, 8192) -> %s equal=%s", res(r).c_str(),
           std::memcmp(h, want.data(), 8192) == 0 ? "yes" : "no"));
  CUstream s = nullptr;
  line("cuStreamCreate(0) -> " + res(cuStreamCreate(&s, 0)));
  line("cuMemcpyDtoHAsync(pinned) -> " + res(cuMemcpyDtoHAsync(h, pa, 8192, s)));
  line("cuStreamSynchronize -> " + res(cuStreamSynchronize(s)));
  line("cuStreamDestroy -> " + res(cuStreamDestroy(s)));
  unsigned int type = 0;
  r = cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)h);
  line(fmt("cuPointerGetAttribute(MEMORY_TYPE, pinned) -> %s type=%u", res(r).c_str(), type));
  // Every attribute of a byte inside it: the result, and what the value is where it is stable.
  CUcontext ctx = nullptr;
  cuCtxGetCurrent(&ctx);
  const CUdeviceptr p100 = (CUdeviceptr)(uintptr_t)(bytes + 100);
  for (int attr = 1; attr <= 15; ++attr) {
    unsigned long long v[4] = {};
    r = cuPointerGetAttribute(v, (CUpointer_attribute)attr, p100);
    std::string what;
    if (r == CUDA_SUCCESS) {
      const unsigned long long base = (uintptr_t)h;
      switch (attr) {
        case 1: {
          CUcontext got = nullptr;
          std::memcpy(&got, v, sizeof got);
          what = got == ctx ? " current" : " other";
          break;
        }
        case 3:
        case 4:
          what = v[0] == p100 ? " =ptr" : v[0] == base ? " =base" : " other";
          break;
        case 7:
          what = v[0] ? " nonzero" : " zero";
          break;
        case 11:
          what = v[0] == base ? " =base" : " other";
          break;
        case 5:
          break;
        default:
          what = fmt(" value=%llu", attr == 12 ? v[0] : v[0] & 0xffffffffull);
      }
    }
    line(fmt("cuPointerGetAttribute(attr=%d, pinned+100) -> %s%s", attr, res(r).c_str(),
             what.c_str()));
  }
  {
    CUpointer_attribute at[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 CU_POINTER_ATTRIBUTE_HOST_POINTER,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    unsigned int mt = 99;
    void* hp = nullptr;
    int ord = 99;
    void* data[3] = {&mt, &hp, &ord};
    r = cuPointerGetAttributes(3, at, data, p100);
    line(
        fmt("cuPointerGetAttributes(MEMORY_TYPE, HOST_POINTER, DEVICE_ORDINAL, pinned+100) -> "
            "%s type=%u host=%s ordinal=%d",
            res(r).c_str(), mt, (uintptr_t)hp == p100 ? "=ptr" : "other", ord));
  }
  line("cuMemFreeHost(pinned+16) -> " + res(cuMemFreeHost(bytes + 16)));
  line("cuMemFreeHost(pinned) -> " + res(cuMemFreeHost(h)));
  type = 0;
  r = cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)h);
  line("cuPointerGetAttribute(MEMORY_TYPE, freed pinned) -> " + res(r));
  line("cuMemFreeHost(pinned) again -> " + res(cuMemFreeHost(h)));
  line("cuMemFreeHost(NULL) -> " + res(cuMemFreeHost(nullptr)));
  char stack[16];
  line("cuMemFreeHost(stack) -> " + res(cuMemFreeHost(stack)));
  CUcontext current = nullptr;
  cuCtxGetCurrent(&current);
  cuCtxSetCurrent(nullptr);
  line("cuMemAllocHost(4096) without context -> " + res(cuMemAllocHost(&h, 4096)));
  cuCtxSetCurrent(current);
}

void probe::streams_and_flush() {
  line("== streams and flush");
  CUstream s = nullptr;
  line("cuStreamCreate(0) -> " + res(cuStreamCreate(&s, 0)));
  const int a = alloc(4096, " a");
  unsigned char buf[4096] = {};
  line("cuMemcpyHtoDAsync -> " + res(cuMemcpyHtoDAsync(m_allocs[a].va, buf, 4096, s)));
  line("cuMemcpyDtoHAsync -> " + res(cuMemcpyDtoHAsync(buf, m_allocs[a].va, 4096, s)));
  line("cuStreamSynchronize -> " + res(cuStreamSynchronize(s)));
  line("cuStreamSynchronize(NULL) -> " + res(cuStreamSynchronize(nullptr)));
  line("cuStreamDestroy -> " + res(cuStreamDestroy(s)));
  CUstream t = nullptr;
  line("cuStreamCreate(1) -> " + res(cuStreamCreate(&t, 1)));
  line("cuStreamDestroy -> " + res(cuStreamDestroy(t)));
  line("cuStreamCreate(0x10) -> " + res(cuStreamCreate(&t, 0x10)));
  line("cuStreamCreate(NULL) -> " + res(cuStreamCreate(nullptr, 0)));
  const int scopes[][2] = {{0, 100}, {0, 200}, {1, 100}, {0, 0}, {0, 150}};
  for (const auto& ts : scopes)
    line(fmt("cuFlushGPUDirectRDMAWrites(%d, %d) -> %s", ts[0], ts[1],
             res(cuFlushGPUDirectRDMAWrites((CUflushGPUDirectRDMAWritesTarget)ts[0],
                                            (CUflushGPUDirectRDMAWritesScope)ts[1]))
                 .c_str()));
}

void probe::destroyed_contexts() {
  line("== destroyed contexts");
  CUcontext a = m_ctx[0].second;
  line("cuCtxSetCurrent(A) -> " + res(cuCtxSetCurrent(a)));
  CUcontext c = nullptr;
  CUresult r = ctx_create(&c, 0, 0);
  m_ctx.push_back({"C", c});
  line("cuCtxCreate C -> " + res(r));
  const int k = alloc(4096, " in C");
  m_prev = 0;  // C's memory may live elsewhere; start the deltas afresh
  // A stream of C used while A is current: its work runs in C.
  CUstream sc = nullptr;
  line("cuStreamCreate in C -> " + res(cuStreamCreate(&sc, 0)));
  line("cuCtxSetCurrent(A) -> " + res(cuCtxSetCurrent(a)));
  unsigned char bytes[4096] = {};
  line("cuMemcpyHtoDAsync on C's stream, A current -> " +
       res(cuMemcpyHtoDAsync(m_allocs[k].va, bytes, 4096, sc)));
  line("cuStreamSynchronize(C's stream), A current -> " + res(cuStreamSynchronize(sc)));
  line("cuCtxSetCurrent(C) -> " + res(cuCtxSetCurrent(c)));
  line("cuCtxDestroy(C) -> " + res(cuCtxDestroy(c)));
  m_allocs[k].live = false;
  CUcontext cur = nullptr;
  r = cuCtxGetCurrent(&cur);
  line(fmt("cuCtxGetCurrent -> %s ctx=%s", res(r).c_str(), ctx_name(cur).c_str()));
  range(m_allocs[k].va, "#" + std::to_string(k) + " after cuCtxDestroy");
  get_attr(7, m_allocs[k].va, "#" + std::to_string(k) + " after cuCtxDestroy");
  // A destroyed handle dangles: libcuda 580 answered INVALID_CONTEXT in some runs and
  // CONTEXT_IS_DESTROYED in others, so only failure is recorded. cuCtxSetCurrent(C) is not
  // probed: libcuda returns CUDA_SUCCESS and the next call crashes (SIGSEGV).
  r = cuCtxDestroy(c);
  line(fmt("cuCtxDestroy(C) again -> %s", r == CUDA_SUCCESS ? "CUDA_SUCCESS" : "fails"));
  line("cuCtxDestroy(NULL) -> " + res(cuCtxDestroy(nullptr)));
  line("cuCtxSetCurrent(A) -> " + res(cuCtxSetCurrent(a)));
  // C's stream once C is gone is not probed either: libcuda 580 returned
  // CONTEXT_IS_DESTROYED for cuStreamSynchronize and cuMemcpyHtoDAsync on it in one program
  // and crashed (SIGSEGV) in cuStreamSynchronize in this one.
  alloc(4 * MiB, " in A after C");
  line("cuCtxDestroy(A) -> " + res(cuCtxDestroy(a)));
  r = cuCtxGetCurrent(&cur);
  line(fmt("cuCtxGetCurrent -> %s ctx=%s", res(r).c_str(), ctx_name(cur).c_str()));
  CUdeviceptr p = 0;
  line("cuMemAlloc after cuCtxDestroy(A) -> " + res(cuMemAlloc(&p, 256)));
  line("cuCtxSynchronize after cuCtxDestroy(A) -> " + res(cuCtxSynchronize()));
}

}  // namespace cuda_probe
