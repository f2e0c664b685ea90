// The probe's CUDA IPC sequence: its two sides.
//
// `probe --ipc`: cuIpcGetMemHandle / cuIpcOpenMemHandle / cuIpcCloseMemHandle between two
// processes, each with cuInit and a context of its own on device 0: the exporter allocates and
// exports, the importer opens, reads and writes through what it opened, and closes. They take
// turns (probe_ipc.h); each line starts with "exporter:" or "importer:". probe_ipc_fork.cpp
// runs them as two processes of the machine.
//
// Nothing that varies run to run is printed: device memory is named after this run's
// allocations ("A4+4096"), buffer IDs as "new" / "same as <first name that had it>", tokens as
// zero / nonzero and as equal or not to the other process's. Exact free-memory deltas and IPC
// handle bytes go on '#' lines, which the comparison leaves out.
//
// Transcript from an H200: tests/data/cuda_probe/h200_cuda13_ipc.txt. The lines below print
// exactly what it recorded: change what the sequence prints only together with a new
// recording.
#include "probe_ipc.h"
#include "probe_named_memory.h"

namespace cuda_probe::ipc {

using namespace named_memory;

// "who: line", or "# who: rest" for a comment line.
std::string prefixed(const std::string& who, const std::string& s) {
  if (s.rfind("#", 0) == 0)
    return "# " + who + ": " + s.substr(s.size() > 1 && s[1] == ' ' ? 2 : 1);
  return who + ": " + s;
}

namespace {

std::string handle_bytes(const CUipcMemHandle& h) {
  return std::string(reinterpret_cast<const char*>(h.reserved), sizeof h.reserved);
}
std::string hex_bytes(const std::string& b) {
  std::string s;
  for (unsigned char c : b) s += fmt("%02x", c);
  return s;
}

// The exporter: cuMemAlloc's buffers, exports them, frees them while they are open.
class ipc_exporter : namer {
 public:
  explicit ipc_exporter(turn_link& l)
      : namer(m_sink), m_sink([&l](const std::string& s) { l.line(s); }), m_link(l) {}
  void run();

 private:
  bool turn() { return m_link.handoff(); }
  // cuIpcGetMemHandle; its bytes kept under `key` (and sent) if it succeeds.
  CUresult get(CUdeviceptr p, const std::string& key, const std::string& why = "") {
    CUipcMemHandle h;
    std::memset(&h, 0xAB, sizeof h);
    const CUresult r = cuIpcGetMemHandle(&h, p);
    std::string s =
        fmt("cuIpcGetMemHandle(%s)%s -> %s", name(p).c_str(), why.c_str(), res(r).c_str());
    if (r == CUDA_SUCCESS) {
      const std::string b = handle_bytes(h);
      std::string same;
      for (const auto& [k, v] : m_handles)
        if (v == b) same = k;
      s += " " + key + (same.empty() ? " bytes=new" : " bytes=same as " + same);
      m_handles.push_back({key, b});
      m_link.send_data(key, b.data(), b.size());
      line(s);
      line("# " + key + "=" + hex_bytes(b));
    } else {
      std::string b = handle_bytes(h);
      s += b == std::string(sizeof h.reserved, (char)0xAB) ? " handle=unwritten"
           : b == std::string(sizeof h.reserved, '\0')     ? " handle=zeroed"
                                                           : " handle=written";
      line(s);
    }
    return r;
  }
  void write_pattern(const std::string& n, size_t size, unsigned seed) {
    std::vector<unsigned char> b(size);
    fill(b.data(), size, seed);
    line(fmt("cuMemcpyHtoD(%s, %s, pattern %u) -> %s", n.c_str(), size_name(size).c_str(), seed,
             res(cuMemcpyHtoD(at(n), b.data(), size)).c_str()));
  }
  void check(const std::string& n, size_t size, std::initializer_list<unsigned> seeds) {
    std::vector<unsigned char> b(size);
    const CUresult r = cuMemcpyDtoH(b.data(), at(n), size);
    std::string what = "other";
    for (unsigned sd : seeds)
      if (holds(b.data(), size, sd)) what = fmt("pattern %u", sd);
    line(fmt("cuMemcpyDtoH(%s, %s) -> %s bytes=%s", n.c_str(), size_name(size).c_str(),
             res(r).c_str(), r == CUDA_SUCCESS ? what.c_str() : "-"));
  }
  void send_va(const std::string& n) {
    const CUdeviceptr p = at(n);
    m_link.send_data("va:" + n, &p, sizeof p);
  }

  void e0();
  void e1();
  void e2();
  void e3();

  sink m_sink;
  turn_link& m_link;
  std::vector<std::pair<std::string, std::string>> m_handles;
  CUcontext m_x = nullptr;
  size_t m_mem = 0;
};

void ipc_exporter::e0() {
  line("== exporter: before cuInit, without a context");
  CUipcMemHandle h;
  line("cuIpcGetMemHandle(null) before cuInit -> " + res(cuIpcGetMemHandle(&h, 0)));
  line("cuIpcGetMemHandle(fake) before cuInit -> " + res(cuIpcGetMemHandle(&h, 0x7f0000000000ull)));
  line("cuInit(0) -> " + res(cuInit(0)));
  line("cuIpcGetMemHandle(fake) without context -> " +
       res(cuIpcGetMemHandle(&h, 0x7f0000000000ull)));
  line("cuCtxCreate X -> " + res(ctx_create(&m_x, 0, 0)));
  m_ctx.push_back({"X", m_x});
  int v = -1;
  CUresult r = cuDeviceGetAttribute(&v, (CUdevice_attribute)125, 0);
  line(fmt("cuDeviceGetAttribute(IPC_EVENT_SUPPORTED=125) -> %s value=%d", res(r).c_str(), v));
  line("== exporter: buffers and their handles");
  alloc("A", 2 * MiB);
  alloc("B", 100);
  alloc("B2", 100);
  alloc("C", 64 * MiB);
  write_pattern("A", 2 * MiB, 1);
  write_pattern("B", 100, 2);
  write_pattern("B2", 100, 3);
  write_pattern("C", 64 * MiB, 4);
  line("cuCtxSynchronize -> " + res(cuCtxSynchronize()));
  unsigned long long id = 0;
  CUDA_POINTER_ATTRIBUTE_P2P_TOKENS tok{};
  for (const char* n : {"A", "B", "B2", "C"}) {
    if (attr(a_buffer_id, at(n), "", nullptr, &id) == CUDA_SUCCESS)
      m_link.send_data(std::string("id:") + n, &id, sizeof id);
    if (attr(a_p2p_tokens, at(n), "", &tok) == CUDA_SUCCESS)
      m_link.send_data(std::string("tok:") + n, &tok, sizeof tok);
    send_va(n);
  }
  for (int a : {a_legacy_ipc, a_allowed_handle_types, a_gdr, a_range_size}) attr(a, at("A"));
  attr(a_legacy_ipc, at("B"));
  get(at("A"), "hA");
  get(at("A"), "hA'", " again");
  get(at("B"), "hB");
  get(at("B2"), "hB2");
  get(at("C"), "hC");
  line("-- interior pointers");
  get(at("A") + 4096, "hA+4096");
  get(at("A") + 2 * MiB - 1, "hA+last");
  get(at("B") + 4, "hB+4");
  get(at("C") + 2 * MiB, "hC+2MiB");
  get(at("A") + 2 * MiB, "hA+end", " (one past the end)");
  line("-- freed, reused, host, pageable, null");
  alloc("F", 2 * MiB);
  get(at("F"), "hF", " (live)");
  free_("F");
  get(at("F"), "hF-freed", " (freed)");
  alloc("G", 2 * MiB);
  get(at("G"), "hG");
  void* hp = nullptr;
  r = cuMemHostAlloc(&hp, 64 * KiB, 0);
  line("cuMemHostAlloc(size=64KiB, flags=0x0) -> " + res(r) + " H");
  if (r == CUDA_SUCCESS) {
    add("H", (CUdeviceptr)(uintptr_t)hp, 64 * KiB);
    get((CUdeviceptr)(uintptr_t)hp, "hH", " (pinned host)");
  }
  void* pg = nullptr;
  if (posix_memalign(&pg, page, 64 * KiB) == 0) {
    add("U", (CUdeviceptr)(uintptr_t)pg, 64 * KiB);
    line("# U: pageable, posix_memalign(alignment=4096, size=64KiB)");
    get((CUdeviceptr)(uintptr_t)pg, "hU", " (pageable)");
  }
  get(0, "hnull", " (null)");
  get(0x7f0000000000ull, "hfake", " (nothing there: fake)");
  // VMM memory: not legacy IPC capable.
  {
    const CUmemAllocationProp p = device_allocation();
    CUmemGenericAllocationHandle vh = 0;
    CUdeviceptr vp = 0;
    r = cuMemCreate(&vh, 2 * MiB, &p, 0);
    const CUresult rr = cuMemAddressReserve(&vp, 2 * MiB, 0, 0, 0);
    const CUresult rm = r == CUDA_SUCCESS && rr == CUDA_SUCCESS ? cuMemMap(vp, 2 * MiB, 0, vh, 0)
                                                                : CUDA_ERROR_UNKNOWN;
    CUmemAccessDesc d;
    std::memset(&d, 0, sizeof d);
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = 0;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    const CUresult ra = rm == CUDA_SUCCESS ? cuMemSetAccess(vp, 2 * MiB, &d, 1) : rm;
    line(fmt("VMM V (cuMemCreate 2MiB, reserve, map, set access) -> %s %s %s %s", res(r).c_str(),
             res(rr).c_str(), res(rm).c_str(), res(ra).c_str()));
    if (ra == CUDA_SUCCESS) {
      add("V", vp, 2 * MiB);
      attr(a_legacy_ipc, vp);
      get(vp, "hV", " (VMM)");
      cuMemUnmap(vp, 2 * MiB);
    }
    if (r == CUDA_SUCCESS) cuMemRelease(vh);
    if (rr == CUDA_SUCCESS) cuMemAddressFree(vp, 2 * MiB);
  }
}

void ipc_exporter::e1() {
  line("== exporter: what the importer wrote");
  check("A", 2 * MiB, {1, 11});
  check("B", 100, {2, 12});
  check("B2", 100, {3, 13});
  check("C", 64 * MiB, {4, 14});
  for (int a : {a_legacy_ipc, a_range_size, a_mapped}) attr(a, at("A"), " (opened by importer)");
}

void ipc_exporter::e2() {
  line("== exporter: frees A, B and C while the importer has them open");
  m_mem = free_memory();
  free_("C", " (open in importer)");
  memory_moved(m_mem, "after cuMemFree(C)", 64 * MiB);
  free_("A", " (open in importer)");
  free_("B", " (open in importer)");
  get(at("A"), "hA-freed", " (freed)");
  alloc("A'", 2 * MiB);
  alloc("C'", 64 * MiB);
  write_pattern("A'", 2 * MiB, 21);
  write_pattern("C'", 64 * MiB, 22);
  line("cuCtxSynchronize -> " + res(cuCtxSynchronize()));
  get(at("A'"), "hA'new");
  m_mem = free_memory();
}

void ipc_exporter::e3() {
  line("== exporter: after the importer wrote through and closed its stale mappings");
  memory_moved(m_mem, "since its turn (importer closed C's mapping)", 64 * MiB);
  check("A'", 2 * MiB, {21, 31});
  check("C'", 64 * MiB, {22, 32});
  line("cuCtxSynchronize -> " + res(cuCtxSynchronize()));
  line("cuIpcGetMemHandle(NULL, A') -> " + res(cuIpcGetMemHandle(nullptr, at("A'"))));
}

void ipc_exporter::run() {
  e0();
  if (!turn()) return;
  e1();
  if (!turn()) return;
  e2();
  if (!turn()) return;
  e3();
  if (!turn()) return;
  line("cuCtxDestroy(X) -> " + res(cuCtxDestroy(m_x)));
  m_link.done();
}

// The importer: opens what the exporter sends, reads and writes through it, closes it.
class ipc_importer : namer {
 public:
  explicit ipc_importer(turn_link& l)
      : namer(m_sink),
        m_sink([&l](const std::string& s) { l.line(s); }),
        m_link(l),
        m_data(l.data) {}
  void run();

 private:
  bool turn() { return m_link.handoff(); }
  bool have(const std::string& k) const { return m_data.count(k) != 0; }
  CUipcMemHandle handle(const std::string& k) const {
    CUipcMemHandle h;
    std::memset(&h, 0, sizeof h);
    auto it = m_data.find(k);
    if (it != m_data.end())
      std::memcpy(h.reserved, it->second.data(), std::min(it->second.size(), sizeof h.reserved));
    return h;
  }
  template <class T>
  T value(const std::string& k) const {
    T v{};
    auto it = m_data.find(k);
    if (it != m_data.end() && it->second.size() == sizeof v)
      std::memcpy(&v, it->second.data(), sizeof v);
    return v;
  }
  // cuIpcOpenMemHandle; a new pointer is named `as` (with its exporter's name `of`, for the
  // relations), a pointer this process already holds by that name.
  CUdeviceptr open(const std::string& k, unsigned flags, const std::string& as,
                   const std::string& of, const std::string& why = "") {
    if (!have(k)) {
      line(fmt("cuIpcOpenMemHandle(%s) -> (no such handle from the exporter)", k.c_str()));
      return 0;
    }
    return open_handle(handle(k), k, flags, as, of, why);
  }
  CUdeviceptr open_handle(const CUipcMemHandle& h, const std::string& k, unsigned flags,
                          const std::string& as, const std::string& of,
                          const std::string& why = "") {
    CUdeviceptr p = 0xABABABABull;
    const CUresult r = cuIpcOpenMemHandle(&p, h, flags);
    std::string s = fmt("cuIpcOpenMemHandle(%s, flags=0x%x)%s -> %s", k.c_str(), flags, why.c_str(),
                        res(r).c_str());
    if (r != CUDA_SUCCESS) {
      s += p == 0xABABABABull ? " ptr=unwritten" : p == 0 ? " ptr=null" : " ptr=written";
      line(s);
      return 0;
    }
    ++m_refs[p];
    const std::string known = inside(p);
    bool is_known = false;
    for (const named& b : m_named)
      if (b.live && b.base == p) is_known = true;
    if (is_known) {
      s += " ptr=" + known;
    } else {
      s += fmt(" %s align=%s chunk_off=0x%llx", as.c_str(), align(p).c_str(),
               (unsigned long long)(p % (2 * MiB)));
      if (!of.empty() && have("va:" + of)) {
        const CUdeviceptr e = value<CUdeviceptr>("va:" + of);
        s += p == e ? " va=exporter's" : " va=not exporter's";
        s += p % (2 * MiB) == e % (2 * MiB) ? " chunk_off=exporter's" : " chunk_off=not exporter's";
      }
      if (!known.empty()) s += " inside=" + known;
      for (const named& b : m_named)
        if (!b.live && b.base == p) s += " reuses_va_of=" + b.name;
      add(as, p, of.empty() || !have("size:" + of) ? 1 : value<size_t>("size:" + of));
      m_of[as] = of;
    }
    line(s);
    return p;
  }
  CUresult close_(CUdeviceptr p, const std::string& why = "") {
    const CUresult r = cuIpcCloseMemHandle(p);
    if (r == CUDA_SUCCESS && m_refs[p] > 0) --m_refs[p];
    line(fmt("cuIpcCloseMemHandle(%s)%s -> %s", name(p).c_str(), why.c_str(), res(r).c_str()));
    return r;
  }
  // Whether a pointer is still known to the driver, and (if it is) whether 4 bytes can be read.
  void still_there(CUdeviceptr p) {
    unsigned t = 0;
    const CUresult r = cuPointerGetAttribute(&t, (CUpointer_attribute)a_memory_type, p);
    std::string s = fmt("  %s: MEMORY_TYPE -> %s", name(p).c_str(), res(r).c_str());
    if (r == CUDA_SUCCESS) {
      unsigned char b[4];
      s += fmt(" value=%u; cuMemcpyDtoH 4 bytes -> %s", t, res(cuMemcpyDtoH(b, p, 4)).c_str());
    }
    line(s);
  }
  void check(const std::string& n, size_t size, std::initializer_list<unsigned> seeds,
             const std::string& why = "") {
    std::vector<unsigned char> b(size);
    const CUresult r = cuMemcpyDtoH(b.data(), at(n), size);
    std::string what = "other";
    for (unsigned sd : seeds)
      if (holds(b.data(), size, sd)) what = fmt("pattern %u", sd);
    line(fmt("cuMemcpyDtoH(%s, %s)%s -> %s bytes=%s", n.c_str(), size_name(size).c_str(),
             why.c_str(), res(r).c_str(), r == CUDA_SUCCESS ? what.c_str() : "-"));
  }
  void write_pattern(const std::string& n, size_t size, unsigned seed,
                     const std::string& why = "") {
    std::vector<unsigned char> b(size);
    fill(b.data(), size, seed);
    line(fmt("cuMemcpyHtoD(%s, %s, pattern %u)%s -> %s", n.c_str(), size_name(size).c_str(), seed,
             why.c_str(), res(cuMemcpyHtoD(at(n), b.data(), size)).c_str()));
  }
  // Pointer attributes of an imported pointer, with its relations to the exporter's buffer.
  void imported_attrs(const std::string& n, const std::string& of) {
    const CUdeviceptr p = at(n);
    for (int a : {a_context, a_memory_type, a_device_pointer, a_host_pointer, a_sync_memops,
                  a_is_managed, a_device_ordinal, a_legacy_ipc, a_range_start, a_range_size,
                  a_mapped, a_allowed_handle_types, a_gdr, a_access_flags})
      attr(a, p);
    unsigned long long id = 0;
    if (attr(a_buffer_id, p, "", nullptr, &id) == CUDA_SUCCESS && have("id:" + of))
      line(fmt("  %s's BUFFER_ID %s %s's in the exporter", n.c_str(),
               id == value<unsigned long long>("id:" + of) ? "equals" : "differs from",
               of.c_str()));
    CUDA_POINTER_ATTRIBUTE_P2P_TOKENS tok{};
    if (attr(a_p2p_tokens, p, "", &tok) == CUDA_SUCCESS && have("tok:" + of)) {
      const auto e = value<CUDA_POINTER_ATTRIBUTE_P2P_TOKENS>("tok:" + of);
      line(fmt("  %s's tokens: p2pToken %s %s's, vaSpaceToken %s %s's", n.c_str(),
               tok.p2pToken == e.p2pToken ? "equals" : "differs from", of.c_str(),
               tok.vaSpaceToken == e.vaSpaceToken ? "equals" : "differs from", of.c_str()));
      const auto own = value<CUDA_POINTER_ATTRIBUTE_P2P_TOKENS>("own_tok");
      line(fmt("  %s's vaSpaceToken %s the importer's own (M's)", n.c_str(),
               tok.vaSpaceToken == own.vaSpaceToken ? "equals" : "differs from"));
    }
    attr(a_sync_memops, p, " (after P2P_TOKENS)");
  }
  void range(CUdeviceptr p) {
    CUdeviceptr b = 0;
    size_t sz = 0;
    const CUresult r = cuMemGetAddressRange(&b, &sz, p);
    std::string s = fmt("cuMemGetAddressRange(%s) -> %s", name(p).c_str(), res(r).c_str());
    if (r == CUDA_SUCCESS) s += fmt(" base=%s size=%zu", name(b).c_str(), sz);
    line(s);
  }

  void i0();
  void i1();
  void i2();
  void i3();

  sink m_sink;
  turn_link& m_link;
  std::map<std::string, std::string>& m_data;
  std::map<std::string, std::string> m_of;  // imported name -> exporter's buffer
  CUcontext m_i = nullptr;
  std::map<CUdeviceptr, int> m_refs;  // successful opens that returned a pointer, less closes
};

void ipc_importer::i0() {
  line("== importer: before cuInit, without a context");
  // The exporter's sizes, for naming (known from the sequence).
  const size_t sizes[] = {2 * MiB, 100, 100, 64 * MiB};
  const char* names[] = {"A", "B", "B2", "C"};
  for (int k = 0; k < 4; ++k)
    m_data["size:" + std::string(names[k])] = std::string((const char*)&sizes[k], sizeof(size_t));
  m_data["size:G"] = std::string((const char*)&sizes[0], sizeof(size_t));
  open("hA", 1, "PA0", "A", " before cuInit");
  line("cuInit(0) -> " + res(cuInit(0)));
  if (open("hA", 1, "PA0", "A", " without context")) close_(at("PA0"), " without context");
  line("cuCtxCreate I -> " + res(ctx_create(&m_i, 0, 0)));
  m_ctx.push_back({"I", m_i});
  alloc("M", 2 * MiB, " (the importer's own)");
  {
    CUDA_POINTER_ATTRIBUTE_P2P_TOKENS tok{};
    if (attr(a_p2p_tokens, at("M"), "", &tok) == CUDA_SUCCESS)
      m_data["own_tok"] = std::string((const char*)&tok, sizeof tok);
    attr(a_buffer_id, at("M"));
  }
  line("== importer: opening the exporter's handles");
  open("hA", 1, "PA", "A");
  open("hA", 1, "PA", "A", " again");
  open("hA", 0, "PA", "A");
  open("hA'", 1, "PA", "A", " (the second handle of A)");
  for (unsigned f : {2u, 3u, 0x100u, 0xffffffffu}) open("hA", f, "PAx", "A");
  open("hB", 1, "PB", "B");
  open("hB2", 1, "PB2", "B2");
  if (at("PB") && at("PB2") && have("va:B") && have("va:B2"))
    line(fmt("  PB2 - PB %s B2 - B in the exporter",
             at("PB2") - at("PB") == value<CUdeviceptr>("va:B2") - value<CUdeviceptr>("va:B")
                 ? "equals"
                 : "differs from"));
  open("hC", 1, "PC", "C");
  for (const char* k : {"hA+4096", "hA+last", "hB+4", "hC+2MiB", "hA+end"})
    if (have(k)) open(k, 1, std::string("P") + k, "");
  open("hF", 1, "PF", "", " (F freed before this open)");
  open("hG", 1, "PG", "G", " (G reuses F's VA)");
  {
    CUipcMemHandle z;
    std::memset(&z, 0, sizeof z);
    open_handle(z, "zeros", 1, "PZ", "");
    std::memset(&z, 0xA5, sizeof z);
    open_handle(z, "0xA5 bytes", 1, "PZ", "");
    if (have("hA")) {
      CUipcMemHandle t = handle("hA");
      t.reserved[63] ^= 0x5a;
      open_handle(t, "hA with byte 63 changed", 1, "PT", "A");
      t = handle("hA");
      t.reserved[0] ^= 0x5a;
      open_handle(t, "hA with byte 0 changed", 1, "PT", "A");
    }
  }
  // A handle of the importer's own memory.
  {
    CUipcMemHandle own;
    const CUresult r = cuIpcGetMemHandle(&own, at("M"));
    line("cuIpcGetMemHandle(M) -> " + res(r));
    if (r == CUDA_SUCCESS) open_handle(own, "hM (the importer's own)", 1, "PM", "");
  }
  line("== importer: bytes through the imported pointers");
  if (at("PA")) check("PA", 2 * MiB, {1});
  if (at("PB")) check("PB", 100, {2});
  if (at("PB2")) check("PB2", 100, {3});
  if (at("PC")) check("PC", 64 * MiB, {4});
  if (at("PA")) write_pattern("PA", 2 * MiB, 11);
  if (at("PB")) write_pattern("PB", 100, 12);
  if (at("PC")) write_pattern("PC", 64 * MiB, 14);
  line("cuCtxSynchronize -> " + res(cuCtxSynchronize()));
  line("== importer: pointer attributes");
  if (at("PA")) imported_attrs("PA", "A");
  if (at("PB")) {
    for (int a : {a_range_start, a_range_size, a_legacy_ipc}) attr(a, at("PB"));
    attr(a_buffer_id, at("PB"));
    attr(a_buffer_id, at("PB2"));
  }
  if (at("PA")) {
    attr(a_range_start, at("PA") + 4096);
    attr(a_range_size, at("PA") + 4096);
    attr(a_buffer_id, at("PA") + 4096);
    range(at("PA") + 4096);
    attr(a_range_size, at("PA") + 2 * MiB, " (one past the end)");
  }
  if (at("PB")) range(at("PB") + 10);
  if (at("PC")) range(at("PC") + MiB);
  line("== importer: exporting imported memory");
  if (at("PA")) {
    CUipcMemHandle h;
    const CUresult r = cuIpcGetMemHandle(&h, at("PA"));
    std::string s = "cuIpcGetMemHandle(PA) -> " + res(r);
    if (r == CUDA_SUCCESS)
      s += handle_bytes(h) == m_data["hA"] ? " bytes=same as hA" : " bytes=differ from hA";
    line(s);
    int fd = -77;
    const CUresult rd =
        cuMemGetHandleForAddressRange(&fd, at("PA"), 2 * MiB, (CUmemRangeHandleType)dma_buf_fd, 0);
    s = "cuMemGetHandleForAddressRange(PA, size=2MiB, DMA_BUF_FD, flags=0x0) -> " + res(rd);
    if (rd == CUDA_SUCCESS) {
      const off_t end = lseek(fd, 0, SEEK_END);
      s += fmt(" fd size=%s",
               end == (off_t)(2 * MiB) ? "=range" : fmt("%lld", (long long)end).c_str());
      close(fd);
    }
    line(s);
    if (at("PC")) {
      CUdeviceptr d = 0;
      const CUresult rc = cuMemAlloc(&d, 4096);
      if (rc == CUDA_SUCCESS) {
        add("N", d, 4096);
        line("cuMemAlloc(4096) N -> " + res(rc));
        line("cuMemcpyDtoD(N, PC, 4096) -> " + res(cuMemcpyDtoD(d, at("PC"), 4096)));
        line("cuMemcpyDtoD(PA, PC, 4096) -> " + res(cuMemcpyDtoD(at("PA"), at("PC"), 4096)));
        line("cuCtxSynchronize -> " + res(cuCtxSynchronize()));
        write_pattern("PA", 2 * MiB, 11, " (again)");
      }
    }
  }
}

void ipc_importer::i1() {
  line("== importer: a second context on the same device");
  CUcontext i2 = nullptr;
  line("cuCtxCreate I2 -> " + res(ctx_create(&i2, 0, 0)));
  m_ctx.push_back({"I2", i2});
  if (CUdeviceptr p = open("hA", 1, "PA_I2", "A", " in I2")) {
    attr(a_context, p, " in I2");
    close_(p, " in I2");
  }
  if (at("PA")) {
    attr(a_context, at("PA"), " in I2");
    check("PA", 4096, {1, 11}, " in I2");
  }
  line("cuCtxDestroy(I2) -> " + res(cuCtxDestroy(i2)));
  line("cuCtxSetCurrent(I) -> " + res(cuCtxSetCurrent(m_i)));
  line("== importer: closing");
  if (at("PA")) {
    const int n = m_refs[at("PA")];
    line(fmt("  PA was returned by %d successful opens not closed yet", n));
    for (int k = 0; k <= n; ++k) {
      close_(at("PA"), fmt(" (close %d)", k + 1));
      still_there(at("PA"));
    }
  }
  if (at("PB")) close_(at("PB") + 4, " (interior)");
  if (at("PC")) close_(at("PC") + 4096, " (interior)");
  close_(at("M"), " (cuMemAlloc memory, not IPC)");
  close_(0, " (null)");
  close_(0x7f0000000000ull, " (fake)");
  if (at("PB2")) {
    close_(at("PB2"));
    still_there(at("PB2"));
    close_(at("PB2"), " (again)");
    if (named* b = find("PB2")) b->live = false;
  }
  // The other handles opened above that this process still holds (kept: PB, PC). On the real
  // driver the handles of interior pointers and the changed handles returned PA, PB or PC
  // themselves (one reference more each, no name of their own), so this finds only PF and PG;
  // PB and PC stay open with two references each (hB and hB+4, hC and hC+2MiB).
  for (const char* n : {"PhA+4096", "PhA+last", "PhB+4", "PhC+2MiB", "PhA+end", "PF", "PG"}) {
    named* b = find(n);
    if (b && b->live) {
      while (m_refs[b->base] > 0 && cuIpcCloseMemHandle(b->base) == CUDA_SUCCESS) --m_refs[b->base];
      b->live = false;
    }
  }
  line("== importer: PA opened again after its last close");
  if (named* b = find("PA")) b->live = false;
  open("hA", 1, "PA2", "A");
}

void ipc_importer::i2() {
  line("== importer: after the exporter freed A, B and C");
  for (const char* n : {"PA2", "PB", "PC"}) {
    if (!at(n)) continue;
    attr(a_memory_type, at(n));
    attr(a_range_size, at(n));
  }
  if (at("PA2")) check("PA2", 2 * MiB, {1, 11, 21});
  if (at("PB")) check("PB", 100, {2, 12});
  if (at("PC")) check("PC", 64 * MiB, {4, 14, 22});
  line("cuCtxSynchronize -> " + res(cuCtxSynchronize()));
  if (at("PA2")) write_pattern("PA2", 2 * MiB, 31);
  if (at("PC")) write_pattern("PC", 64 * MiB, 32);
  line("cuCtxSynchronize -> " + res(cuCtxSynchronize()));
  if (at("PA2")) check("PA2", 2 * MiB, {1, 11, 21, 31}, " (after writing)");
  open("hA", 1, "PA3", "A", " (A freed, PA2 still open)");
  open("hA-freed", 1, "PAF", "A", " (handle got after A was freed)");
  open("hA'new", 1, "PAN", "A'", " (A' at A's VA?)");
  if (at("PAN")) check("PAN", 2 * MiB, {21});
  if (named* b = find("PAN")) {
    if (b->live) close_(b->base, " (PAN)");
    b->live = false;
  }
  if (at("PA2")) {
    const int n = m_refs[at("PA2")];
    for (int k = 0; k < n; ++k) {
      close_(at("PA2"), fmt(" (close %d)", k + 1));
      still_there(at("PA2"));
    }
    if (named* b = find("PA2")) b->live = false;
  }
  if (named* b = find("PA3"))
    if (b->live) close_(b->base, " (PA3)");
  // One close each: on the real driver PB and PC hold two references, so they stay mapped (the
  // transcript's header says so); kept as recorded.
  if (at("PB")) close_(at("PB"));
  if (at("PC")) close_(at("PC"));
  line("cuCtxSynchronize -> " + res(cuCtxSynchronize()));
  open("hA", 1, "PA4", "A", " (A freed, all closed)");
  open("hC", 1, "PC4", "C", " (C freed, all closed)");
}

void ipc_importer::i3() {
  line("== importer: NULL pointer argument");
  if (have("hG"))
    line("cuIpcOpenMemHandle(NULL, hG, flags=0x1) -> " +
         res(cuIpcOpenMemHandle(nullptr, handle("hG"), 1)));
  line("cuCtxDestroy(I) -> " + res(cuCtxDestroy(m_i)));
}

void ipc_importer::run() {
  if (!m_link.await()) return;
  i0();
  if (!turn()) return;
  i1();
  if (!turn()) return;
  i2();
  if (!turn()) return;
  i3();
  m_link.done();
}

}  // namespace

void run_exporter(turn_link& l) {
  ipc_exporter e(l);
  e.run();
}

void run_importer(turn_link& l) {
  ipc_importer i(l);
  i.run();
}

}  // namespace cuda_probe::ipc
