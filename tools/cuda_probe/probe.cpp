// cuda_probe: driver-API reference sequences whose transcript is compared between the real
// CUDA driver and p2psim's CUDA model. One program (probe.cpp, probe_sections.cpp), two builds:
//   real GPU:  g++ -std=c++17 -O1 -I/usr/local/cuda/include probe.cpp probe_sections.cpp
//              -lcuda -o probe
//   p2psim:    compiled with -DCUDA_PROBE_MODEL -DCUDA_PROBE_NO_MAIN into the conformance test
//              (tests/conformance/real_driver_test.cpp), against models/driver/cuda/cuda.h.
// Only calls and enum values that p2psim's cuda.h declares are used; attribute values are
// written as numbers so that enumerators a newer real header drops or renames do not matter.
// Nothing that varies run to run is printed: VAs are named after the allocations of this run
// (#k+offset), buffer IDs as "new" / "same as #k", contexts by name, tokens as zero/nonzero.
// probe.h declares what the two files share.
#include "probe.h"

namespace cuda_probe {

const char* result_name(CUresult r) {
  const char* s = nullptr;
  if (cuGetErrorName(r, &s) == CUDA_SUCCESS && s) return s;
  // A code the driver's table lacks: its number, so that transcripts still tell codes apart.
  static thread_local char unnamed[32];
  std::snprintf(unnamed, sizeof unnamed, "(unnamed %d)", int(r));
  return unnamed;
}

std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

// CUDA 13 gave cuCtxCreate a create-parameters argument; the classic form is what p2psim
// models (CUDA 12.2 level). NULL parameters are the classic behaviour.
CUresult ctx_create(CUcontext* c, unsigned int flags, CUdevice dev) {
#if CUDA_VERSION >= 13000 && !defined(CUDA_PROBE_CTX_CLASSIC)
  return cuCtxCreate(c, nullptr, flags, dev);
#else
  return cuCtxCreate(c, flags, dev);
#endif
}

int probe::alloc(size_t size, const char* why) {
  CUdeviceptr p = 0;
  const CUresult r = cuMemAlloc(&p, size);
  std::string s = fmt("cuMemAlloc(size=%zu)%s -> %s", size, why, res(r).c_str());
  if (r != CUDA_SUCCESS) {
    line(s);
    return -1;
  }
  const int k = int(m_allocs.size());
  allocation a;
  a.va = p;
  a.size = size;
  a.live = true;
  // Which earlier (freed) allocation's VA this is, before the new one shadows it.
  std::string reused;
  for (size_t j = 0; j < m_allocs.size(); ++j)
    if (!m_allocs[j].live && m_allocs[j].va == p) reused = fmt(" reuses_va_of=#%zu", j);
  const long long delta = m_prev ? (long long)(p - m_prev) : 0;
  // Within one 2 MiB chunk the distance is the sub-allocator's packing; between chunks and
  // big allocations it is the driver's VA-region layout (deterministic, but not modelled).
  const bool near = p / (2 * MiB) == m_prev / (2 * MiB);
  const CUresult ri = cuPointerGetAttribute(&a.buffer_id, (CUpointer_attribute)7, p);
  m_allocs.push_back(a);
  s += fmt(" #%d align=%s chunk_off=0x%llx", k, align(p).c_str(),
           (unsigned long long)(p % (2 * MiB)));
  if (m_prev) s += near ? fmt(" delta_prev=%lld", delta) : std::string(" delta_prev=other_chunk");
  s += reused;
  s += " buffer_id=" + (ri == CUDA_SUCCESS ? buffer_id_name(a.buffer_id, k) : res(ri));
  m_prev = p;
  line(s);
  return k;
}

// Each section after the first allocates in a context of its own: a context's first
// allocation starts a chunk of its own, so no section depends on what earlier ones left.
void probe::fresh_context(const std::string& name) {
  CUcontext c = nullptr;
  const CUresult r = ctx_create(&c, 0, 0);
  m_ctx.push_back({name, c});
  m_prev = 0;
  line("cuCtxCreate " + name + " -> " + res(r));
}

void probe::free_(int k) {
  const CUresult r = cuMemFree(m_allocs[k].va);
  if (r == CUDA_SUCCESS) m_allocs[k].live = false;
  line(fmt("cuMemFree(#%d) -> %s", k, res(r).c_str()));
}

// One attribute, printed in a form that does not vary run to run.
void probe::get_attr(int attr, CUdeviceptr p, const std::string& what) {
  union {
    unsigned char raw[64];
    CUcontext ctx;
    unsigned int u;
    int i;
    CUdeviceptr dp;
    void* host;
    unsigned long long ull;
    size_t sz;
    CUDA_POINTER_ATTRIBUTE_P2P_TOKENS tok;
  } v;
  std::memset(v.raw, 0xAB, sizeof v.raw);
  const CUresult r = cuPointerGetAttribute(v.raw, (CUpointer_attribute)attr, p);
  std::string s =
      fmt("cuPointerGetAttribute(attr=%d, %s) -> %s", attr, what.c_str(), res(r).c_str());
  if (r == CUDA_SUCCESS) {
    switch (attr) {
      case 1:
        s += " ctx=" + ctx_name(v.ctx);
        break;
      case 3:
        s += " ptr=" + (v.dp == p ? std::string("=arg") : va(v.dp));
        break;
      case 4:
        s += " host=" + std::string(v.host == (void*)(uintptr_t)p ? "=arg"
                                    : v.host                      ? "other"
                                                                  : "null");
        break;
      case 5:
        s += fmt(" p2pToken=%s vaSpaceToken=%s", v.tok.p2pToken ? "nonzero" : "zero",
                 v.tok.vaSpaceToken ? "nonzero" : "zero");
        break;
      case 7:
        s += " id=" + buffer_id_name(v.ull, -1);
        break;
      case 11:
        s += " start=" + va(v.dp);
        break;
      case 12:
        s += fmt(" size=%zu", v.sz);
        break;
      case 14:
        s += fmt(" value=%llu", v.ull);
        break;
      default:
        s += fmt(" value=%d", v.i);
        break;  // the int and unsigned int ones
    }
  }
  line(s);
}

// cuPointerGetAttributes with the attributes its reference lists (P2P_TOKENS is not one).
void probe::get_attrs(CUdeviceptr p, const std::string& what) {
  CUpointer_attribute attrs[] = {
      (CUpointer_attribute)1,  (CUpointer_attribute)2, (CUpointer_attribute)3,
      (CUpointer_attribute)4,  (CUpointer_attribute)6, (CUpointer_attribute)7,
      (CUpointer_attribute)8,  (CUpointer_attribute)9, (CUpointer_attribute)11,
      (CUpointer_attribute)12, (CUpointer_attribute)13};
  CUcontext ctx = (CUcontext)(uintptr_t)1;
  unsigned int type = 77, sync = 77, managed = 77, mapped = 77;
  CUdeviceptr dp = 1, start = 1;
  void* host = (void*)1;
  unsigned long long id = 1;
  int ordinal = 77;
  size_t size = 77;
  void* data[] = {&ctx, &type, &dp, &host, &sync, &id, &managed, &ordinal, &start, &size, &mapped};
  const CUresult r = cuPointerGetAttributes(11, attrs, data, p);
  std::string s = fmt("cuPointerGetAttributes(all 11, %s) -> %s", what.c_str(), res(r).c_str());
  const std::string host_s = host == (void*)(uintptr_t)p ? "=arg" : host ? "other" : "null";
  const std::string start_s = start == 1 ? "unwritten" : va(start);
  const std::string size_s = size == 77 ? "unwritten" : std::to_string(size);
  if (r == CUDA_SUCCESS)
    s += fmt(
        " ctx=%s type=%u devptr=%s host=%s sync=%u id=%s managed=%u ordinal=%d start=%s "
        "size=%s mapped=%u",
        ctx_name(ctx).c_str(), type, dp == p ? "=arg" : va(dp).c_str(), host_s.c_str(), sync,
        buffer_id_name(id, -1).c_str(), managed, ordinal, start_s.c_str(), size_s.c_str(), mapped);
  line(s);
}

void probe::range(CUdeviceptr p, const std::string& what) {
  CUdeviceptr base = 0;
  size_t size = 0;
  const CUresult r = cuMemGetAddressRange(&base, &size, p);
  std::string s = fmt("cuMemGetAddressRange(%s) -> %s", what.c_str(), res(r).c_str());
  if (r == CUDA_SUCCESS) s += fmt(" base=%s size=%zu", va(base).c_str(), size);
  line(s);
}

void probe::run() {
  before_init();
  devices();
  contexts();
  allocations();
  reuse();
  pointer_attributes();
  sync_memops();
  address_range_and_free();
  copies();
  host_memory();
  streams_and_flush();
  destroyed_contexts();
  line("== end");
}

void run(const sink& out) {
  probe p(out);
  p.run();
}

}  // namespace cuda_probe

#ifndef CUDA_PROBE_NO_MAIN
// `probe` runs every sequence; `probe --peer` the peer-access one (two GPUs); `probe --host`
// the host-memory one (probe_host.cpp).
int main(int argc, char** argv) {
  const auto print = [](const std::string& s) {
    std::printf("%s\n", s.c_str());
    std::fflush(stdout);  // keep every line if the driver crashes on a later call
  };
  if (argc > 1 && std::strcmp(argv[1], "--peer") == 0)
    cuda_probe::run_peer(print);
  else if (argc > 1 && std::strcmp(argv[1], "--host") == 0)
    cuda_probe::run_host(print);
  else if (argc > 1 && std::strcmp(argv[1], "--vmm") == 0)
    cuda_probe::run_vmm(print);
  else if (argc > 1 && std::strcmp(argv[1], "--dmabuf") == 0)
    cuda_probe::run_dmabuf(print);
  else if (argc > 1 && std::strcmp(argv[1], "--ipc") == 0)
    cuda_probe::run_ipc(print);
  else
    cuda_probe::run(print);
  return 0;
}
#endif
