// The probe's sequences and the helpers they print with (probe.cpp; the sequences themselves
// are in probe_sections.cpp). See probe.cpp for how it is built.
#pragma once

#ifdef CUDA_PROBE_MODEL
#include "models/driver/cuda/cuda.h"
#else
#include <cuda.h>
#endif

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace cuda_probe {

using sink = std::function<void(const std::string&)>;

// Runs every sequence, one line of transcript to `out` per call.
void run(const sink& out);
// Runs the peer-access sequence alone (probe_peer.cpp; a machine with two GPUs).
void run_peer(const sink& out);
// Runs the host-memory sequence alone (probe_host.cpp): pinned and registered host memory.
void run_host(const sink& out);
// Runs the virtual-memory-management sequence alone (probe_vmm.cpp): reserve, create, map.
void run_vmm(const sink& out);
// The dma-buf export and the two-process IPC sequences (probe_dmabuf.cpp).
void run_dmabuf(const sink& out);
void run_ipc(const sink& out);

// The name of CUpointer_attribute `a` (1-21, as cuda.h names them without their prefix), or
// "?": what the sequences print it as.
inline const char* attr_name(int a) {
  static const char* const names[] = {"?",
                                      "CONTEXT",
                                      "MEMORY_TYPE",
                                      "DEVICE_POINTER",
                                      "HOST_POINTER",
                                      "P2P_TOKENS",
                                      "SYNC_MEMOPS",
                                      "BUFFER_ID",
                                      "IS_MANAGED",
                                      "DEVICE_ORDINAL",
                                      "IS_LEGACY_CUDA_IPC_CAPABLE",
                                      "RANGE_START_ADDR",
                                      "RANGE_SIZE",
                                      "MAPPED",
                                      "ALLOWED_HANDLE_TYPES",
                                      "IS_GPU_DIRECT_RDMA_CAPABLE",
                                      "ACCESS_FLAGS",
                                      "MEMPOOL_HANDLE",
                                      "MAPPING_SIZE",
                                      "MAPPING_BASE_ADDR",
                                      "MEMORY_BLOCK_ID",
                                      "IS_HW_DECOMPRESS_CAPABLE"};
  return a > 0 && a < int(sizeof(names) / sizeof(*names)) ? names[a] : "?";
}

const char* result_name(CUresult r);
std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
// cuCtxCreate in the classic form, whichever header's (CUDA 13 added a parameters argument).
CUresult ctx_create(CUcontext* c, unsigned int flags, CUdevice dev);

constexpr uint64_t KiB = 1024, MiB = 1024 * 1024;

// The largest power of two dividing a VA, capped at 2 MiB (the big page).
inline std::string align(CUdeviceptr p) {
  if (p == 0) return "-";
  uint64_t a = 1;
  while (a < 2 * MiB && p % (a * 2) == 0) a *= 2;
  if (a >= 2 * MiB) return "2MiB+";
  if (a >= MiB) return fmt("%lluMiB", (unsigned long long)(a / MiB));
  if (a >= KiB) return fmt("%lluKiB", (unsigned long long)(a / KiB));
  return fmt("%llu", (unsigned long long)a);
}

struct allocation {
  CUdeviceptr va = 0;
  size_t size = 0;
  bool live = false;
  unsigned long long buffer_id = 0;
};

class probe {
 public:
  explicit probe(const sink& out) : m_out(out) {}
  void run();
  void peer_access();  // probe_peer.cpp

 private:
  void line(const std::string& s) { m_out(s); }
  std::string res(CUresult r) { return result_name(r); }

  // A VA named after this run's allocations: "#k" or "#k+off" (latest allocation whose
  // [base, base + size] holds it), "host", "stack", "null", else "unknown".
  std::string va(CUdeviceptr p) const {
    if (p == 0) return "null";
    if (p == m_host) return "host";
    if (p == m_stack) return "stack";
    for (size_t k = m_allocs.size(); k-- > 0;) {
      const allocation& a = m_allocs[k];
      if (p >= a.va && p - a.va <= a.size)
        return p == a.va ? fmt("#%zu", k) : fmt("#%zu+%llu", k, (unsigned long long)(p - a.va));
    }
    return "unknown";
  }
  std::string ctx_name(CUcontext c) const {
    if (!c) return "null";
    for (const auto& [name, h] : m_ctx)
      if (h == c) return name;
    return "other";
  }
  std::string buffer_id_name(unsigned long long id, int self) {
    if (id == 0) return "0";
    auto it = m_ids.find(id);
    if (it != m_ids.end()) return fmt("same as #%d", it->second);
    if (self >= 0) m_ids[id] = self;
    return "new";
  }

  int alloc(size_t size, const char* why = "");
  void fresh_context(const std::string& name);
  void free_(int k);
  void get_attr(int attr, CUdeviceptr p, const std::string& what);
  void get_attrs(CUdeviceptr p, const std::string& what);
  void range(CUdeviceptr p, const std::string& what);

  void before_init();
  void devices();
  void contexts();
  void allocations();
  void reuse();
  void pointer_attributes();
  void sync_memops();
  void address_range_and_free();
  void copies();
  void host_memory();
  void streams_and_flush();
  void destroyed_contexts();

  const sink& m_out;
  std::vector<allocation> m_allocs;
  std::map<unsigned long long, int> m_ids;  // buffer ID -> first allocation that had it
  std::vector<std::pair<std::string, CUcontext>> m_ctx;
  CUdeviceptr m_host = 0, m_stack = 0;
  CUdeviceptr m_prev = 0;  // the last successful allocation
};

}  // namespace cuda_probe
