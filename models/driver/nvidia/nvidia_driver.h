// The model of NVIDIA's kernel driver behind nv-p2p.h and the CUDA driver API: GPUs and
// their BAR1 apertures, processes, CUDA contexts and UVA allocations, and third-party pins
// (GPUDirect RDMA 13.3, chapters 5-7). Pure C++: the nv-p2p and CUDA entry points call it;
// the time a call takes is accumulated for the SystemC shell to wait out.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "models/driver/kernel/kernel.h"
#include "models/driver/nvidia/nv-p2p.h"
#include "models/driver/nvidia/va_space.h"
#include "models/driver/nvidia/vram_frames.h"
#include "models/gpu/bar1_page_table.h"
#include "models/gpu/rdma_visibility.h"
#include "models/memory/backing_store.h"

namespace p2psim::nv {

struct dma_mapping_record;  // pin.h

// What the driver manages on one GPU: the GPU model's own BAR1 page table and VRAM, and what
// its kernels see of RDMA writes (guide 5.7), which CUDA synchronization and flushes change.
struct gpu_resources {
  std::string name;
  std::array<uint8_t, NVIDIA_P2P_GPU_UUID_LEN> uuid{};
  gpu::bar1_page_table* bar1 = nullptr;
  uint64_t bar1_bus_base = 0;  // bus address of BAR1
  memory::backing_store* vram = nullptr;
  gpu::rdma_visibility* visibility = nullptr;  // nullptr: not modelled, syncs and flushes no-ops
};

struct driver_config {
  bool share_bar1 = true;             // CUDA 7.0+: overlapping pins share BAR1 pages (guide 4.7);
                                      // false: CUDA 6.0, new BAR1 space every time (4.8)
  bool accept_null_callback = false;  // drivers before R535 took NULL as "persistent" (4.2)
  double pin_base_ns = 10'000;        // nvidia_p2p_get_pages: "up to milliseconds" (guide 5.1)
  double pin_page_ns = 1'000;         // ... plus this per 64 KiB page
  double unpin_base_ns = 5'000;
  uint64_t seed = 1;  // randomized p2pTokens (guide 7.2)
  // Guide 7.2 describes a randomized p2pToken; driver 580 (checked on an H100, CUDA 13) hands
  // out p2pToken 0 and tells contexts apart by vaSpaceToken alone. false: the 580 behaviour.
  bool random_p2p_token = false;
};

// Something a caller did wrong, or an event worth a line in the report.
struct driver_event {
  std::string what;  // "put_pages inside free callback", "callback", ...
  std::string detail;
};

struct driver_counters {
  uint64_t pins = 0, unpins = 0, persistent_pins = 0, callbacks = 0;
  uint64_t refused = 0;  // calls that returned an error
  uint64_t misuse = 0;   // calls the real driver tolerates (returns 0) that were still wrong:
                         // late or foreign put_pages, free_page_table outside a callback, ...
  uint64_t bar1_exhausted = 0;  // get_pages refused with -ENOMEM: no BAR1 pages left (5.5)
  uint64_t bar1_pages_peak = 0;
  uint64_t events_dropped = 0;  // events beyond max_events, counted but not kept
  double pin_ns = 0;            // total simulated time spent pinning and unpinning
  // dma-bufs exported (cuMemGetHandleForAddressRange) and importers' maps and unmaps of them.
  uint64_t dma_buf_exports = 0, dma_buf_maps = 0, dma_buf_unmaps = 0;
};

class nvidia_driver {
 public:
  explicit nvidia_driver(const driver_config& c = {});
  ~nvidia_driver();
  nvidia_driver(const nvidia_driver&) = delete;
  nvidia_driver& operator=(const nvidia_driver&) = delete;

  int add_gpu(const gpu_resources& g);  // returns the device ordinal
  int gpu_count() const { return int(m_gpus.size()); }
  // Whether GPU `from` may reach GPU `to`'s memory directly over the fabric (what
  // cuDeviceCanAccessPeer answers): the machine's builder says so pair by pair; by default no
  // pair may.
  void set_peer_reachable(int from, int to, bool reachable) {
    if (reachable)
      m_peer_reachable.insert({from, to});
    else
      m_peer_reachable.erase({from, to});
  }
  bool peer_reachable(int from, int to) const { return m_peer_reachable.count({from, to}) > 0; }
  const gpu_resources& gpu(int ordinal) const { return m_gpus.at(ordinal).res; }
  const driver_config& config() const { return m_config; }

  // ---- processes, contexts, allocations (used by the CUDA API model) ----
  struct context {
    int id = 0;
    kernel::pid_t pid = 0;
    int gpu = 0;
    uint64_t p2p_token = 0;       // randomized (guide 7.2)
    uint32_t va_space_token = 0;  // one per context: tokens identify a GPU VA space (5.6)
  };
  struct allocation {
    uint64_t va = 0, size = 0;
    uint64_t reserve = 0;   // VA bytes it takes: size rounded to 512 B, or to 2 MiB when big
    bool in_chunk = false;  // sub-allocated in a 2 MiB chunk (size <= 2 MiB)
    int ctx = 0;
    uint64_t buffer_id = 0;  // unique for the life of the driver (guide 7.2)
    bool sync_memops = false;
    uint64_t ipc_export = 0;  // opened by cuIpcOpenMemHandle: the export it maps (0: own memory)
  };
  int create_context(kernel::pid_t pid, int gpu);
  // A buffer ID for memory the driver maps outside VRAM (pinned host memory): from the same
  // sequence as allocations', so never equal to one (guide 7.2).
  uint64_t new_buffer_id() { return m_next_buffer_id++; }
  // Destroys the context and frees its allocations (running free callbacks). false if no such
  // live context of `pid`.
  bool destroy_context(kernel::pid_t pid, int ctx);
  const context* find_context(int ctx) const;
  // A UVA allocation in `ctx`, laid out as driver 580 does (checked on an H100): up to 2 MiB
  // it takes `size` rounded up to 512 B in a 2 MiB-aligned chunk of the context, first fit
  // (lowest chunk, lowest offset, so freed VAs are reused), a new chunk when none has room;
  // bigger ones take whole 2 MiB pages of their own. nullopt when VRAM or VA is exhausted.
  std::optional<uint64_t> mem_alloc(int ctx, uint64_t size);
  // Frees the allocation starting at `va` of process `pid`, revoking pins first (5.3).
  bool mem_free(kernel::pid_t pid, uint64_t va);
  // The live allocation of `pid` that contains `va`.
  allocation* find_allocation(kernel::pid_t pid, uint64_t va);
  // Exit of a process: all its memory is freed, callbacks run, contexts go (5.3).
  void process_exit(kernel::pid_t pid);
  // VRAM in use on `gpu` (frames mapped or held), in bytes: what cuMemGetInfo counts as taken.
  uint64_t vram_used_bytes(int gpu) const;
  // VRAM offset and GPU of the byte at `va` in `pid`'s address space.
  std::optional<std::pair<int, uint64_t>> vram_of(kernel::pid_t pid, uint64_t va) const;

  // ---- nv-p2p (nv-p2p.h forwards here; docs/driver-model.md says what each returns) ----
  int get_pages(uint64_t p2p_token, uint32_t va_space_token, uint64_t va, uint64_t length,
                nvidia_p2p_page_table_t** table, void (*cb)(void*), void* data, bool persistent);
  int put_pages(uint64_t p2p_token, uint32_t va_space_token, uint64_t va,
                nvidia_p2p_page_table_t* table);
  int put_pages_persistent(uint64_t va, nvidia_p2p_page_table_t* table);
  int free_page_table(nvidia_p2p_page_table_t* table);
  int dma_map_pages(pci_dev* peer, nvidia_p2p_page_table_t* table,
                    nvidia_p2p_dma_mapping_t** mapping);
  int dma_unmap_pages(pci_dev* peer, nvidia_p2p_page_table_t* table,
                      nvidia_p2p_dma_mapping_t* mapping);
  int free_dma_mapping(nvidia_p2p_dma_mapping_t* mapping);

  // ---- CUDA IPC (cuIpcGetMemHandle / cuIpcOpenMemHandle / cuIpcCloseMemHandle; ipc.cpp,
  // docs/driver-model.md, "CUDA IPC") ----
  // An allocation as another process may map it: the exporter's VA the import maps (the
  // allocation's 2 MiB chunk, or its own pages), where the allocation lies in it, and the
  // frames of its pages, which the export holds until the exporting context goes.
  struct ipc_export {
    kernel::pid_t pid = 0;
    int ctx = 0, gpu = 0;
    uint64_t span = 0, span_bytes = 0;
    uint64_t span_id = 0;  // the memory behind the span: its chunk, or the allocation
    uint64_t offset = 0, size = 0, reserve = 0;
    uint64_t first_page = 0;       // offset in the span of its first 64 KiB page
    std::vector<uint64_t> frames;  // of its pages, in order
  };
  // Exports the allocation of `pid` holding `va`: its id (its BUFFER_ID; the same for every
  // pointer into it), or 0 when there is none (freed, host, VMM or imported memory).
  uint64_t ipc_export_of(kernel::pid_t pid, uint64_t va);
  const ipc_export* find_ipc_export(uint64_t id) const;
  enum class ipc_open_result { mapped, unknown, own_process, other_context, out_of_va };
  // Maps export `id` into context `ctx`'s process, or counts one more open of it there; `va`
  // gets the pointer. A process maps an export once, in one context.
  ipc_open_result ipc_open(int ctx, uint64_t id, uint64_t& va);
  // One close of the import starting at `va` of `pid`; the last one unmaps it. false when no
  // import starts there.
  bool ipc_close(kernel::pid_t pid, uint64_t va);

  // ---- dma-buf export (cuMemGetHandleForAddressRange; docs/driver-model.md, "dma-buf") ----
  // Whether [va, va + size) of `pid` is device memory the driver can export: every 64 KiB
  // page of it mapped on one GPU, or in a 2 MiB chunk that small allocations are carved from
  // (the driver backs a chunk whole; driver 580 exports a chunk's unallocated bytes too).
  bool exportable(kernel::pid_t pid, uint64_t va, uint64_t size) const;
  // Makes [va, va + size) of `pid` a dma-buf and opens it in `pid`'s file table: the
  // descriptor, or -EINVAL when the range is not exportable. The buffer holds the VRAM of every
  // allocation the range touches (driver 580 frees none of it, not even outside the range,
  // until the last descriptor of any export of it is closed) and outlives cuMemFree and
  // cuCtxDestroy of that memory.
  int export_dma_buf(kernel::pid_t pid, uint64_t va, uint64_t size);

  // ---- CUDA VMM (docs/driver-model.md, "VMM"): physical memory of one GPU that no context
  // owns (cuMemCreate), VA a process reserves (cuMemAddressReserve) and mappings of the one
  // at the other (cuMemMap). Memory lives while a handle or a mapping holds it. ----
  struct vmm_mapping {
    uint64_t va = 0, size = 0;
    uint64_t memory = 0;             // what vmm_create returned
    uint64_t handle = 0;             // the caller's name for the handle it mapped (CUDA's)
    uint64_t buffer_id = 0;          // a new one for every cuMemMap (driver 580)
    std::map<int, unsigned> access;  // device ordinal -> CU_MEM_ACCESS_FLAGS_*; none: no access
  };
  // `size` bytes (a multiple of 64 KiB) of `gpu`'s VRAM, cleared, with one handle of process
  // `pid` on it: its id, or nullopt when VRAM is full.
  std::optional<uint64_t> vmm_create(kernel::pid_t pid, int gpu, uint64_t size, bool rdma_capable);
  // Another handle on the memory, of process `pid` (an import), or of a descriptor (pid 0: an
  // exported file, whichever process has it) / one fewer. The memory goes with the last handle
  // once no mapping is left; a process's exit drops its handles and mappings.
  void vmm_add_handle(uint64_t memory, kernel::pid_t pid);
  void vmm_drop_handle(uint64_t memory, kernel::pid_t pid);
  // The frames of live memory, in order (what a cuMemCreate took).
  std::vector<uint64_t> vmm_frames(uint64_t memory) const;
  // The GPU and size of live memory; nullopt once it is gone.
  std::optional<std::pair<int, uint64_t>> vmm_memory_of(uint64_t memory) const;
  // `size` bytes of `pid`'s VA aligned to `align` (a power of two, at least 2 MiB), at `hint`
  // when it is free there: in context `ctx`'s VA when given and small, else in the process's
  // own (docs/driver-model.md, "VMM", says where driver 580 put them). nullopt: no VA left.
  std::optional<uint64_t> vmm_reserve(kernel::pid_t pid, int ctx, uint64_t size, uint64_t align,
                                      uint64_t hint);
  // Frees exactly one reservation that no mapping overlaps; false otherwise.
  bool vmm_free_reservation(kernel::pid_t pid, uint64_t va, uint64_t size);
  // The reservation holding `va`: its base and size.
  std::optional<std::pair<uint64_t, uint64_t>> vmm_reservation_of(kernel::pid_t pid,
                                                                  uint64_t va) const;
  // Maps the whole of `memory` at `va` (which a reservation holds; the mapping may run past
  // its end, as driver 580 allows) with no access yet; false if any of its VA is mapped.
  bool vmm_map(kernel::pid_t pid, uint64_t va, uint64_t memory, uint64_t handle);
  // Unmaps every mapping inside [va, va + size): nullopt (nothing done) if one only partly is.
  // Revocable pins on what goes get their free callbacks first, as for cuMemFree (5.3).
  std::optional<std::vector<vmm_mapping>> vmm_unmap(kernel::pid_t pid, uint64_t va, uint64_t size);
  // The mapping holding `va`, and the mappings lying back to back across [va, va + size) from
  // `va` (empty unless they cover it whole).
  vmm_mapping* vmm_mapping_at(kernel::pid_t pid, uint64_t va);
  std::vector<vmm_mapping*> vmm_mappings_over(kernel::pid_t pid, uint64_t va, uint64_t size);

  // ---- what happened ----
  static constexpr size_t max_events = 1000;  // kept; later ones only counted
  const driver_counters& counters() const { return m_counters; }
  const std::vector<driver_event>& events() const { return m_events; }
  uint64_t bar1_used_bytes(int gpu) const;  // the reserved region plus every mapped page
  // nvidia_p2p_get_pages calls on this GPU refused with -ENOMEM because BAR1 was full.
  uint64_t bar1_exhausted(int gpu) const { return m_gpus.at(gpu).bar1_exhausted; }
  size_t live_pins() const { return m_pins.size(); }
  // What the driver keeps of contexts and processes: the live ones only (destroyed contexts
  // and exited processes leave nothing behind).
  size_t live_contexts() const { return m_contexts.size(); }
  size_t known_processes() const { return m_processes.size(); }
  // Simulated time the calls since the last take cost (pinning is slow: guide 5.1).
  double take_elapsed_ns();

 private:
  struct pin;             // pin.h
  class exported_memory;  // dma_buf_export.cpp: what a dma-buf of this driver holds
  struct gpu_state {
    gpu_resources res;
    vram_frames frames;
    std::map<uint64_t, std::pair<uint64_t, int>> bar1_of;  // frame -> (BAR1 page, pins), when
                                                           // pins share BAR1 pages (4.7)
    uint64_t bar1_exhausted = 0;
  };
  struct va_page {  // one 64 KiB page of a process's UVA space in use
    int ctx = 0;    // a page holds memory of one context, so of one GPU; 0: a VMM mapping's
    int gpu = 0;
    uint64_t frame = 0;
    int allocations = 0;         // live allocations touching it; 0: being freed
    std::vector<uint64_t> pins;  // ids of the revocable pins that map it
    bool imported = false;       // another process's memory (CUDA IPC): it holds the frame
  };
  struct chunk {  // 2 MiB of one context's VA that small allocations are carved from
    int ctx = 0;
    va_space free;
    uint64_t used = 0;  // bytes taken; 0: the chunk goes back to the process's VA space
    uint64_t id = 0;    // never reused: a chunk made later at the same VA is other memory
  };
  struct block {  // VA of one context: its chunks and big allocations are taken from it
    int ctx = 0;
    uint64_t size = 0;
    va_space free;
    bool large = false;  // for allocations of large_alloc_bytes or more, apart from the rest
  };
  struct vmm_memory {
    int gpu = 0;
    bool rdma_capable = false;             // gpuDirectRDMACapable: nv-p2p may pin it
    std::vector<uint64_t> frames;          // its 64 KiB frames, in order
    std::map<kernel::pid_t, int> handles;  // by the process holding them (0: descriptors)
    int mappings = 0;
  };
  struct ipc_span {  // an importer's mapping of an exporter's span (ipc.cpp)
    int ctx = 0;
    uint64_t span_id = 0, bytes = 0;
    std::map<uint64_t, int> opens;  // by export id: opens not closed yet
  };
  struct process_state {
    std::map<uint64_t, allocation> allocations;  // by va
    std::map<uint64_t, ipc_span> ipc_spans;      // by base
    std::map<uint64_t, uint64_t> reservations;   // VMM: base -> size
    std::map<uint64_t, vmm_mapping> mappings;    // VMM: by va
    va_space va{uva_base, uva_limit};
    std::map<uint64_t, block> blocks;   // by base; a context's go back when it is destroyed
    std::map<uint64_t, chunk> chunks;   // by base
    std::map<uint64_t, va_page> pages;  // by VA page number
  };

  int refuse(int err, const std::string& what, const std::string& detail);
  // Simulated time a pin, unpin or dma-buf map takes (counted in pin_ns, waited out by the
  // caller through take_elapsed_ns).
  void charge(double ns) {
    m_counters.pin_ns += ns;
    m_elapsed_ns += ns;
  }
  int tolerate(const std::string& what, const std::string& detail);  // returns 0
  void note(const std::string& what, const std::string& detail);
  process_state& process(kernel::pid_t pid);
  const context* context_of_tokens(uint64_t p2p_token, uint32_t va_space_token) const;
  void free_allocation(kernel::pid_t pid, uint64_t va, const std::string& why);
  // `bytes` of context `ctx`'s VA, 2 MiB aligned: first fit in its blocks, else a new block.
  std::optional<uint64_t> take_ctx_va(process_state& ps, int ctx, uint64_t bytes,
                                      const std::function<bool(uint64_t)>& usable,
                                      uint64_t align = alloc_chunk_bytes, bool large = false);
  // Returns an allocation's VA to its chunk or to its context's block.
  void give_back_va(process_state& ps, uint64_t va, uint64_t reserve, bool in_chunk);
  // A chunk's pages that an export mapped and no allocation uses go with the chunk.
  void unmap_unused_pages(process_state& ps, uint64_t chunk_base);
  // Once its allocations are gone; VMM reservations in them stay the process's.
  void release_blocks(process_state& ps, int ctx);
  void vmm_free_memory_if_unused(uint64_t memory);
  // The base of the VMM mapping holding VA page `page` (which a mapping holds).
  static uint64_t vmm_base(const process_state& ps, uint64_t page);
  void forget_context(int ctx);
  // BAR1 pages for `frames`: how many are not mapped yet (those a new mapping needs), and a
  // page mapping one frame, shared with the pins and dma-buf mappings that mapped it already
  // (guide 4.7) unless the driver gives new BAR1 space every time (4.8). The caller checked
  // that there is room.
  uint64_t bar1_pages_needed(const gpu_state& gs, const std::vector<uint64_t>& frames) const;
  uint64_t map_bar1(gpu_state& gs, uint64_t frame);
  void unmap_bar1(gpu_state& gs, uint64_t frame, uint64_t bar1_page);
  // The pins the NVIDIA driver tracks, by the page table it handed out.
  pin* live_pin(const nvidia_p2p_page_table_t* t) const;
  bool recently_dead(const nvidia_p2p_page_table_t* t) const;
  void revoke(uint64_t pin_id, const std::string& why);
  void end_pin(pin& p);  // BAR1, I/O mappings, frames and indexes go; the table is dead

  driver_config m_config;
  std::vector<gpu_state> m_gpus;
  std::set<std::pair<int, int>> m_peer_reachable;
  std::map<int, context> m_contexts;                      // live ones
  std::map<std::pair<uint64_t, uint32_t>, int> m_tokens;  // of live contexts
  std::map<kernel::pid_t, process_state> m_processes;
  std::map<uint64_t, vmm_memory> m_vmm;          // live, by id
  std::map<uint64_t, ipc_export> m_ipc_exports;  // by id
  void release_ipc_exports(int ctx);             // the exporting context goes
  uint64_t m_next_vmm = 1;
  std::map<uint64_t, std::unique_ptr<pin>> m_pins;                      // live, by id
  std::map<const nvidia_p2p_page_table_t*, uint64_t> m_pin_of;          // live, by table
  std::deque<std::unique_ptr<pin>> m_quarantine;                        // the last dead pins
  std::map<const nvidia_p2p_dma_mapping_t*, uint64_t> m_mapping_owner;  // live mappings
  std::deque<std::unique_ptr<dma_mapping_record>> m_dead_mappings;      // the last unmapped
  std::mt19937_64 m_rng;
  int m_next_ctx = 1;
  uint32_t m_next_va_space = 1;
  uint64_t m_next_buffer_id = 1;
  uint64_t m_next_chunk_id = 1;
  uint64_t m_next_pin = 1;
  driver_counters m_counters;
  std::vector<driver_event> m_events;
  double m_elapsed_ns = 0;
};

}  // namespace p2psim::nv
