// The reference model of the driver state the GPUDirect RDMA guide defines, written from
// docs/driver-model.md alone and kept obviously correct rather than fast: contexts and their
// tokens, allocations and the 64 KiB VA pages and VRAM frames behind them, pins with their
// BAR1 pages, DMA mappings, the callbacks owed, and every byte of VRAM. It shares no code with
// models/driver. Where the real driver is free to choose (which VA, frame, BAR1 page or IOVA),
// the reference takes the models' choice and checks that it is a legal one (`learn_*`); every
// return code and every effect it predicts itself.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tests/driver_ref/commands.h"

namespace p2psim::driver_ref {

inline constexpr uint64_t page_bytes = 64 * 1024;  // GPU_BOUND_SIZE (guide 6.2)
inline constexpr uint64_t uva_begin = 1ull << 32;  // below: never GPU memory here
inline constexpr uint64_t uva_end = 1ull << 40;    // "within the first 40 bits" (7.1)
// cuMemAlloc's layout as driver 580 shows it (tests/data/cuda_probe): sizes round up to 512 B,
// buffers above 2 MiB to 2 MiB and start on a 2 MiB boundary.
inline constexpr uint64_t granule_bytes = 512;
inline constexpr uint64_t chunk_bytes = 2 << 20;

struct ref_config {
  int gpus = 2;
  uint64_t frames = 64;         // VRAM per GPU, in 64 KiB frames
  uint64_t bar1_pages = 64;     // BAR1 aperture per GPU, in 64 KiB pages ...
  uint64_t bar1_reserved = 32;  // ... of which the driver's own (guide 5.5)
  bool share_bar1 = true;       // pins of one frame share its BAR1 page (4.7)
};

struct ref_context {
  int pid = 0, gpu = 0;
  bool alive = true;
  std::optional<std::pair<uint64_t, uint32_t>> tokens;  // once P2P_TOKENS was read
  std::set<int> peers;  // the contexts it has peer access to (cuCtxEnablePeerAccess)
};

struct ref_allocation {
  int pid = 0, ctx = 0;
  uint64_t va = 0, size = 0;
  bool alive = true;
  std::optional<uint64_t> buffer_id;  // once read
  bool sync_memops = false;
  uint64_t chunk = 0;  // up to 2 MiB: the chunk it lies in, numbered as chunks come and go
  uint64_t end() const { return va + size; }
  // The bytes it holds: its size rounded up to the allocation granule; the pages it maps.
  uint64_t reserve() const {
    return size <= chunk_bytes ? (size + granule_bytes - 1) / granule_bytes * granule_bytes
                               : (size + chunk_bytes - 1) / chunk_bytes * chunk_bytes;
  }
  uint64_t first_page() const { return va / page_bytes; }
  uint64_t last_page() const { return (va + reserve() - 1) / page_bytes; }
};

struct ref_page {        // a VA page in use
  int ctx = 0, gpu = 0;  // ctx -1: a VMM mapping's page (no context owns it)
  uint64_t frame = 0;
  int allocations = 0;    // 0 while its last allocation (or its mapping) is going
  int memory = -1;        // a VMM mapping's: the memory it maps
  bool imported = false;  // another process's memory, opened by CUDA IPC: it holds the frame
};

// CUDA IPC (docs/driver-model.md, "CUDA IPC"): an export holds its allocation's frames until
// its context goes; an importer maps the exporter's span (the 2 MiB chunk of a small
// allocation, or a big one's own pages) in one of its contexts, its pages holding the frames,
// one close per open.
using ref_span_id = std::tuple<int, uint64_t, uint64_t>;  // (pid, chunk, 0) or (-1, -1, alloc)
struct ref_ipc_export {
  int pid = 0, ctx = 0, gpu = 0, alloc = 0;
  ref_span_id span;
  uint64_t span_start = 0, span_bytes = 0;  // in the exporter's VA
  uint64_t first_page = 0;                  // VA page number of frames[0] in the exporter
  std::vector<uint64_t> frames;
  bool alive = true;
};
struct ref_ipc_span {
  int pid = 0, ctx = 0;
  ref_span_id span;
  uint64_t base = 0, bytes = 0;
  std::map<int, int> opens;  // by export: opens not closed yet
  bool alive = true;
};

// CUDA VMM (docs/driver-model.md, "VMM"): physical memory of one GPU, held by handles (per
// process) and mappings; reserved VA; mappings of whole handles with per-GPU access.
struct ref_vmm_memory {
  int gpu = 0;
  bool rdma = false;             // gpuDirectRDMACapable: nv-p2p may pin it
  std::vector<uint64_t> frames;  // learned from the models at cuMemCreate
  std::map<int, int> handles;    // by pid
  int mappings = 0;
  bool alive = true;
};
struct ref_vmm_handle {
  int pid = 0, memory = 0;
  int refs = 1, mappings = 0;
  bool usable() const { return refs > 0 || mappings > 0; }
};
struct ref_reservation {
  int pid = 0;
  uint64_t va = 0, size = 0;
  bool alive = true;
};
struct ref_vmm_mapping {
  int pid = 0, handle = 0;
  uint64_t va = 0, size = 0;
  std::map<int, unsigned> access;  // by GPU: 1 read, 3 read-write
  bool alive = true;
};

// Page-locked host memory (docs/driver-model.md, "Checked on real hardware": libcuda 580 on an
// H200, `probe --host`): a cuMemHostAlloc block or a cuMemHostRegister range, exact in bytes.
struct ref_host_block {
  int pid = 0, ctx = 0;
  uint64_t start = 0, size = 0;
  unsigned flags = 0;  // as passed
  bool registered = false;
  bool alive = true;
  bool holds(uint64_t p) const { return alive && p >= start && p - start < size; }
};

enum class pin_state { live, in_callback, ended };

struct ref_pin {
  int caller = 0, memory_pid = 0, ctx = 0, gpu = 0;
  uint64_t va = 0, length = 0;
  bool persistent = false;
  bool by_kmd = false;   // the peer's kernel driver made it (its callback frees the table)
  bool dma_buf = false;  // not nv-p2p's: a kernel driver's map of an imported dma-buf
  callback_action action = callback_action::free_table;
  pin_state st = pin_state::live;
  std::vector<uint64_t> frames;      // per 64 KiB entry
  std::vector<uint64_t> bar1_pages;  // per entry, once learned
};

struct ref_mapping {
  int pin = 0, peer = 0;
  bool live = true;
  std::vector<uint64_t> addresses;  // per entry: what the peer puts on the bus
};

// A dma-buf export (cuMemGetHandleForAddressRange, docs/driver-model.md "dma-buf export"): the
// frames of every allocation its range touched, held until its descriptor is closed.
struct ref_export {
  int pid = 0, gpu = 0;
  std::vector<uint64_t> frames;        // each once
  std::vector<uint64_t> range_frames;  // of the range's own 64 KiB pages, in order
  bool open = true;                    // its descriptor
  int imports = 0;  // kernel drivers' imports holding the buffer (past its descriptor's close)
};

// A callback the reference expects, in order, with the nested call it makes.
struct expected_callback {
  int pin = 0;
  callback_action action = callback_action::nothing;
  int target_pin = -1;          // put_self / put_other: the table it releases
  uint64_t va = 0, length = 0;  // get_pages_*: the range it pins
  int result = 0;               // what the nested call must return
};

class reference {
 public:
  explicit reference(const ref_config& c);
  const ref_config& config() const { return m_config; }

  // ---- contexts and processes ----
  int create_context(int pid, int gpu);  // its index
  const ref_context& context(int i) const { return m_contexts.at(i); }
  ref_context& context(int i) { return m_contexts.at(i); }
  size_t contexts() const { return m_contexts.size(); }
  // Frees the context's allocations (lowest VA first) and kills its tokens.
  std::vector<expected_callback> destroy_context(int ctx);
  std::vector<expected_callback> process_exit(int pid);
  int context_of_tokens(uint64_t p2p, uint32_t va_space) const;  // -1: no live context
  std::string learn_tokens(int ctx, uint64_t p2p, uint32_t va_space);

  // ---- page-locked host memory: the blocks the calls made; a context's end ends its own ----
  std::vector<ref_host_block>& host_blocks() { return m_host; }

  // ---- allocations ----
  // May cuMemAlloc of `size` in `ctx` fail with out-of-memory? (Only when no placement of it
  // could find enough free frames.)
  bool may_run_out(int ctx, uint64_t size) const;
  // The models placed a new allocation at `va` with these frames for its fresh pages; checks
  // that the placement is legal and records it. Returns "" or what is wrong.
  std::string learn_allocation(int ctx, uint64_t va, uint64_t size,
                               const std::map<uint64_t, std::pair<int, uint64_t>>& frames);
  const ref_allocation& allocation(int i) const { return m_allocations.at(i); }
  ref_allocation& allocation(int i) { return m_allocations.at(i); }
  size_t allocations() const { return m_allocations.size(); }
  // The live allocation of `pid` holding [va, va + bytes), or -1.
  int allocation_at(int pid, uint64_t va, uint64_t bytes = 1) const;
  std::vector<expected_callback> free_allocation(int i, int freeing_pid);
  std::string learn_buffer_id(int alloc, uint64_t id);
  const ref_page* page(int pid, uint64_t page_number) const;

  // ---- nv-p2p ----
  struct pin_request {
    int caller = 0;
    uint64_t p2p = 0;
    uint32_t va_space = 0;
    uint64_t va = 0, length = 0;
    bool persistent = false, table = true, callback = true;
    uint32_t flags = 0;
  };
  // What nvidia_p2p_get_pages(_persistent) returns, without doing it.
  int predict_get_pages(const pin_request& r) const;
  // Does it (the prediction was 0): the new pin's index.
  int get_pages(const pin_request& r, callback_action action, bool by_kmd);
  std::string learn_bar1_pages(int pin, const std::vector<uint64_t>& bus_addresses,
                               uint64_t bar1_bus_base);
  const ref_pin& pin(int i) const { return m_pins.at(i); }
  size_t pins() const { return m_pins.size(); }
  // put_pages from `caller` with these tokens: 0 always; true when it releases the pin.
  bool put_pages(int caller, uint64_t p2p, uint32_t va_space, int pin);
  int put_pages_persistent(int pin, uint32_t flags);  // pin -1: NULL
  int dma_map(int pin, int peer);                     // -EINVAL or the new mapping's index
  void learn_mapping(int mapping, std::vector<uint64_t> addresses);
  bool dma_unmap(int mapping, int table_pin);  // unmapped (it was on that live table)?
  const ref_mapping& mapping(int i) const { return m_mappings.at(i); }
  size_t mappings() const { return m_mappings.size(); }

  // ---- dma-buf export ----
  // What cuMemGetHandleForAddressRange(DMA_BUF_FD) of [va, va + size) by `pid` returns, with or
  // without a current context: the argument checks (no handle written), then the range, which
  // must be in use on one GPU, then the PCIe-only flag (bit 0).
  enum class export_result { success, invalid_value, invalid_context, not_supported };
  export_result predict_export(int pid, bool has_context, uint64_t va, uint64_t size,
                               uint64_t flags) const;
  // Whether the models may export a range the reference cannot judge: a page not in use in a
  // 2 MiB chunk where `pid` has small allocations (the driver backs a chunk whole; the
  // reference does not track chunks).
  bool export_undecided(int pid, uint64_t va, uint64_t size) const;
  // Does it (the prediction was success): the export's index.
  int export_range(int pid, uint64_t va, uint64_t size);
  void close_export(int e);  // its descriptor closed: its frames go, once no import holds it
  // A kernel driver's import of export `e` (dma_buf_get, attach, map; by its process): 0,
  // -EBADF (its descriptor closed) or -ENOMEM (BAR1 exhausted). The map takes BAR1 pages for
  // the range's frames, shared with pins (4.7), and is never revoked: it is a persistent pin
  // of the kernel driver's here, made by `add_import`, ended by `release_import`.
  int predict_import(int e) const;
  int add_import(int e, int pid);
  void release_import(int pin, int e);
  const ref_export& exported(int e) const { return m_exports.at(e); }
  size_t exports() const { return m_exports.size(); }

  // ---- CUDA VMM ----
  // cuMemCreate's memory: the frames the models took, checked free, then cleared. Returns ""
  // or what is wrong; `handle` gets the new handle's index.
  std::string learn_vmm_memory(int pid, int gpu, bool rdma, const std::vector<uint64_t>& frames,
                               int& handle);
  const ref_vmm_handle& vmm_handle(int h) const { return m_vmm_handles.at(h); }
  const ref_vmm_memory& vmm_memory(int m) const { return m_vmm_memory.at(m); }
  size_t vmm_handles() const { return m_vmm_handles.size(); }
  bool release_handle(int h);  // cuMemRelease: false (INVALID_VALUE) with no reference left
  // cuMemAddressReserve placed `size` bytes at `va`: "" or why that is not a legal place.
  std::string learn_reservation(int pid, uint64_t va, uint64_t size, uint64_t hint);
  const ref_reservation& reservation(int r) const { return m_reservations.at(r); }
  size_t reservations() const { return m_reservations.size(); }
  bool free_reservation(int pid, uint64_t va, uint64_t size);  // cuMemAddressFree: done?
  bool map(int pid, uint64_t va, int handle);  // cuMemMap of the whole handle: done?
  // cuMemUnmap: nullopt (INVALID_VALUE) when a mapping lies only partly inside; else the
  // callbacks of the pins on what goes, in order.
  std::optional<std::vector<expected_callback>> unmap(int pid, uint64_t va, uint64_t size,
                                                      int freeing_pid);
  const ref_vmm_mapping& vmm_mapping(int m) const { return m_vmm_mappings.at(m); }
  ref_vmm_mapping& vmm_mapping(int m) { return m_vmm_mappings.at(m); }
  size_t vmm_mappings() const { return m_vmm_mappings.size(); }
  // May a context of `gpu` read (`write`: and write) all of [va, va + bytes) of `pid`'s VMM
  // mappings?
  bool vmm_accessible(int pid, int gpu, uint64_t va, uint64_t bytes, bool write) const;

  // ---- CUDA IPC ----
  // cuIpcGetMemHandle of `ptr` by `pid`: the export of the live allocation holding it (the one
  // it had, or a new one holding its frames), or -1 (INVALID_VALUE).
  int ipc_export(int pid, uint64_t ptr);
  enum class ipc_open_result {
    mapped,
    invalid_value,
    invalid_context,
    invalid_handle,
    unreachable
  };
  // What cuIpcOpenMemHandle of export `e` with `flags` in context `ctx` (-1: none) returns;
  // `reachable`: the context's GPU may reach the export's. For mapped, `span` is the open span
  // it maps into, or -1 when it needs a new one.
  ipc_open_result predict_ipc_open(int ctx, int e, unsigned flags, bool reachable, int& span) const;
  // Records the open the models made at `ptr`: "" or why that is not a legal place for it.
  std::string learn_ipc_open(int ctx, int e, uint64_t ptr);
  // cuIpcCloseMemHandle(ptr) by `pid` (with a context): done? The last close unmaps.
  bool ipc_close(int pid, uint64_t ptr);
  const ref_ipc_export& ipc_exported(int e) const { return m_ipc_exports.at(e); }
  size_t ipc_exports() const { return m_ipc_exports.size(); }
  // The open imports of `pid`: (pointer, export) of each.
  std::vector<std::pair<uint64_t, int>> ipc_imports(int pid) const;

  // ---- what a peer reaches, and VRAM ----
  // The frame behind a BAR1 page of `gpu`, if a live pin maps it.
  std::optional<uint64_t> bar1_frame(int gpu, uint64_t bar1_page) const;
  uint64_t bar1_in_use(int gpu) const;
  // The reference's copy of VRAM, written through the mappings the reference says exist.
  std::vector<uint8_t>& vram(int gpu) { return m_vram.at(gpu); }
  // Frames that must not be handed out: mapped by a VA page or held by a pin.
  bool frame_in_use(int gpu, uint64_t frame) const;
  uint64_t frames_free(int gpu) const;

 private:
  std::vector<expected_callback> free_all(int pid,
                                          const std::function<bool(const ref_allocation&)>& doomed);
  void end_pin(int i);
  void revoke_all(const std::vector<int>& pins, int freeing_pid,
                  std::vector<expected_callback>& out);
  void run_callback(int pin, int freeing_pid, std::vector<expected_callback>& out);
  std::vector<int> doomed_pins(int pid, const std::vector<uint64_t>& emptied) const;

  ref_config m_config;
  std::vector<ref_context> m_contexts;
  std::vector<ref_allocation> m_allocations;
  std::map<int, std::map<uint64_t, ref_page>> m_pages;  // pid -> VA page number -> page
  std::vector<ref_pin> m_pins;
  std::vector<ref_mapping> m_mappings;
  std::vector<std::vector<int>> m_frame_mapped;  // gpu -> frame -> VA pages mapping it (0/1)
  std::vector<std::vector<int>> m_frame_holds;   // gpu -> frame -> pins and exports holding it
  std::vector<std::vector<int>> m_frame_vmm;     // gpu -> frame -> VMM memory owning it (0/1)
  std::vector<ref_vmm_memory> m_vmm_memory;
  std::vector<ref_vmm_handle> m_vmm_handles;
  std::vector<ref_reservation> m_reservations;
  std::vector<ref_vmm_mapping> m_vmm_mappings;
  void free_vmm_memory_if_unused(int m);
  std::vector<expected_callback> unmap_all(int pid);  // its exit
  std::vector<ref_export> m_exports;
  std::vector<ref_ipc_export> m_ipc_exports;
  std::vector<ref_ipc_span> m_ipc_spans;
  uint64_t m_chunks = 0;  // chunks made so far
  void unmap_import(ref_ipc_span& s, int e);
  void end_ipc(const std::function<bool(int ctx)>& ending);  // contexts that go
  std::map<uint64_t, int> m_buffer_ids;  // every BUFFER_ID seen -> its allocation
  std::vector<std::vector<uint8_t>> m_vram;
  std::vector<ref_host_block> m_host;
};

}  // namespace p2psim::driver_ref
