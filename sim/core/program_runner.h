// Runs a scenario's program in simulated time (SystemC shell around the pure driver models):
// each step calls the CUDA API or the third-party driver as its process, then waits out what
// the call cost (pinning takes time: guide 5.1); DMA steps program the DMA engine from the
// page table and verify every byte against VRAM. The free callback of the third-party driver
// waits in simulated time for the region's in-flight DMA (guide 6.4).
#pragma once

#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>
#include <systemc>

#include "models/driver/cuda/cuda.h"
#include "models/driver/nvidia/nvidia_driver.h"
#include "models/driver/peer/nvidia_peermem.h"
#include "models/driver/peer/peer_memory.h"
#include "models/driver/peer/regcache.h"
#include "sim/core/copy_engine_executor.h"
#include "sim/core/program.h"
#include "sim/core/result.h"
#include "sim/core/system.h"

namespace p2psim::transport {
struct stream_record;
}

namespace p2psim::core {

// "-EINVAL", "-ENOMEM", ... for a negative errno; "ok" for 0.
std::string errno_name(int r);

// A CUDA call's result as a step reports it: "ok", else the CUresult's name.
std::string step_result(CUresult r);

class program_runner : public sc_core::sc_module {
 public:
  program_runner(sc_core::sc_module_name name, fabric_system& sys, const program_spec& p,
                 uint64_t seed);
  ~program_runner() override;
  // Steps, driver and cache counters, BAR1 use per GPU, DMA results (for JSON and report).
  nlohmann::json results() const;
  // The named cuMemcpy steps, as transfers: each one's time and rate (program_steps.cpp).
  std::vector<bandwidth_result> copy_results() const;
  // One line per failed expectation or lost byte; empty when the program ran as expected.
  const std::vector<std::string>& errors() const { return m_errors; }
  // The step it was in if it never finished (empty when it did).
  const std::string& stuck_at() const { return m_doing; }

 private:
  struct buffer {
    uint64_t va = 0, size = 0;
    int pid = 0;
    bool live = true;   // false once freed: calls on it still go to the API (and fail there)
    bool host = false;  // host memory (malloc, cuMemHostAlloc): va is its address
  };
  // One GPU's BAR1 at its peak use: what the pins asked for, what their 64 KiB pages add up
  // to, and what BAR1 maps (less, when pins share pages: guide 4.7).
  struct bar1_peak {
    uint64_t used = 0;       // nvidia-smi's Used: the reserved region plus mapped pages
    uint64_t requested = 0;  // bytes the live pins asked for
    uint64_t pinned = 0;     // the same pins rounded out to 64 KiB pages, each pin counted
    uint64_t mapped = 0;     // BAR1 pages mapped, a shared page once
  };
  struct dma_result {
    std::string name;
    bool write = true;
    uint64_t bytes = 0, landed = 0, failed = 0, mismatched = 0;
    uint64_t lost = 0;       // posted writes dropped by a link that went down
    uint64_t timed_out = 0;  // read bytes whose completions never came
    // Bytes that reached memory they were not allowed to reach: more of the new data in the
    // destination than the fabric says landed, or bytes that are neither old nor new.
    uint64_t escaped = 0;
    uint64_t stale = 0;  // read bytes that differ from what the program had put there
    // Through a memory region: repetitions the device refused (a remote access error), and
    // bytes written into memory the program had freed (a registration that outlived it).
    bool through_mr = false;
    uint64_t access_errors = 0;
    uint64_t into_freed = 0;
    uint64_t first_ps = 0, last_ps = 0;
    bool done = false;
    // Counts one repetition of `bytes`, whose stream `r` has landed (program_dma_steps.cpp).
    void add(const transport::stream_record& r, uint64_t bytes);
  };

  void main();
  std::string run_step(const step_spec& s);
  std::string cuda_step(const step_spec& s, int pid);
  std::string dma(const step_spec& s, int pid, size_t result_index);
  std::string memcpy_step(const step_spec& s);
  std::vector<uint8_t> held_bytes(const std::string& name, uint64_t offset, uint64_t len) const;
  std::string host_step(const step_spec& s, int pid);     // program_host_steps.cpp
  std::string dma_buf_step(const step_spec& s, int pid);  // program_dma_buf_steps.cpp
  std::string vmm_step(const step_spec& s, int pid);      // program_vmm_steps.cpp
  std::string rdma_step(const step_spec& s, int pid);     // program_rdma_steps.cpp
  std::string ipc_step(const step_spec& s, int pid);      // program_ipc_steps.cpp
  std::string mr_dma(const step_spec& s, size_t index);   // a remote access through an MR
  void close_verbs(int pid);                              // a process's exit deregisters its MRs
  int node_of(const step_spec& s) const;                  // the NUMA node of its `socket`
  CUstream stream_of(const step_spec& s) const;
  // A cuMemcpyDtoH's bytes against what the program had copied into the buffer.
  struct host_check {
    std::string where, buffer;
    const uint8_t* host = nullptr;  // the copy's destination
    std::vector<uint8_t> expected;
  };
  void check_host_bytes(const host_check& c);
  void note_dma_errors(const dma_result& d);  // lost, refused, ... bytes: errors of the run
  // Where a buffer's bytes live: VRAM page by page, or the frames of host memory (kept across a
  // free: the pages a DMA started on).
  struct vram_piece {
    memory::backing_store* store = nullptr;  // a GPU's VRAM or a socket's memory
    uint64_t vram = 0, length = 0;           // offset in `store`
  };
  std::vector<vram_piece> vram_pieces(const buffer& b, uint64_t offset, uint64_t length);
  // The same for an imported dma-buf region's [va, va + length) (program_dma_buf_steps.cpp).
  std::vector<vram_piece> region_pieces(const peer::kmd_region& r, uint64_t va, uint64_t length);
  // The memory the peer device reaches at these bus addresses: through its IOMMU (when that
  // translates) and a GPU's BAR1.
  std::vector<vram_piece> bus_pieces(const std::vector<kernel::bus_run>& runs);
  // Bytes of the pieces that differ from the engine's local memory from `local` on.
  uint64_t verify(const std::vector<vram_piece>& where, uint64_t length, uint64_t local);

  // ---- the driver API called directly (program_p2p_steps.cpp) ----
  // A pin a get_pages step named: what the call handed out, kept as the program got it. The
  // table pointer is only ever passed back to the API, never read after the get_pages step
  // (it dies with a revocation): the bus addresses and frames are copied then.
  struct dma_mapping_copy {
    nvidia_p2p_dma_mapping_t* mapping = nullptr;  // passed back only, like the table
    std::vector<uint64_t> bus;                    // its dma_addresses, copied when mapped
  };
  struct pin_record {
    program_runner* runner = nullptr;
    std::string name;
    std::string callback;         // what its free callback does (step_spec::callback)
    std::string callback_buffer;  // callback get_pages: what it pins ("" = its own range)
    nvidia_p2p_page_table_t* table = nullptr;  // NULL when get_pages failed
    uint64_t va = 0, length = 0;
    uint64_t p2p_token = 0;
    uint32_t va_space_token = 0;
    bool persistent = false;
    std::vector<uint64_t> bus;       // BAR1 bus address of each 64 KiB page
    std::vector<vram_piece> frames;  // the VRAM behind each page when it was pinned
    std::map<std::string, dma_mapping_copy> mappings;  // by peer device
    int callbacks = 0;                                 // times its free callback ran
    std::string callback_result;  // what the call inside the last callback returned
  };
  // A value a pointer attribute step stored (`store`): P2P_TOKENS keep both tokens.
  struct stored_value {
    uint64_t value = 0;
    uint32_t va_space_token = 0;
    bool read = false;  // false: the step that stores it failed
  };
  std::string p2p_step(const step_spec& s, int pid);
  std::string get_pages_step(const step_spec& s, int pid);
  std::string attribute_step(const step_spec& s, int pid);
  std::string pin_dma(const step_spec& s, int pid, size_t index);
  std::string callbacks_check(const step_spec& s);
  std::string check_value(const attribute_spec& a, uint64_t value, uint32_t va_space_token);
  static void pin_free_callback(void* data);
  void run_free_callback(pin_record& p);
  std::pair<uint64_t, uint32_t> tokens_of(const tokens_spec& t, const pin_record* pin) const;
  pci_dev* peer_device(const std::string& engine);  // "" = the peer_driver's device
  const std::string& peer_name(const std::string& engine) const;
  pin_record* pin_of(const step_spec& s);  // nullptr for `pin: NULL`
  void write_gpu(const std::vector<vram_piece>& where, const std::vector<uint8_t>& bytes);
  uint64_t escaped_bytes(const std::vector<vram_piece>& where, const std::vector<uint8_t>& now,
                         const std::vector<uint8_t>& before, uint64_t landed);
  void wait_driver_time();
  void sample_bar1();
  // The registration cache of a process: user space, so each process has its own (guide 5.2).
  peer::regcache& cache_of(int pid);
  bool on_gpu(const peer::kmd_region& r, int gpu);
  int pid_of(const std::string& process) const;

  fabric_system& m_sys;
  const program_spec& m_spec;
  uint64_t m_seed;
  nv::nvidia_driver m_driver;
  host_frames m_frames;  // the sockets' memory as the OS hands it out (outlives m_os)
  kernel::os m_os;       // the program's processes and the driver they reach; bound in main()
  pci_dev m_peer_dev;
  std::unique_ptr<peer::kmd> m_kmd;
  std::map<int, std::unique_ptr<peer::regcache>> m_caches;  // by pid
  uint64_t m_peak_cached_bytes = 0;                         // all processes' caches together
  dma::dma_initiator* m_engine = nullptr;                   // the peer driver's device
  std::map<std::string, buffer> m_buffers;
  std::map<int, CUcontext> m_contexts;                   // the last context each process created
  std::map<std::string, CUcontext> m_named_contexts;     // by their cuCtxCreate's name
  std::map<std::string, CUstream> m_streams;             // by their cuStreamCreate's name
  std::map<std::string, std::vector<uint8_t>> m_images;  // what cuMemcpy put in each buffer
  // A buffer another process's memory stands for (cuIpcOpenMemHandle): they share one image.
  std::map<std::string, std::string> m_image_of;
  const std::string& image_key(const std::string& buffer) const {
    auto it = m_image_of.find(buffer);
    return it == m_image_of.end() ? buffer : it->second;
  }
  // IPC handles the program got (cuIpcGetMemHandle), by name, with the buffer they export.
  struct ipc_handle {
    CUipcMemHandle handle{};  // zeros when the call failed: no export has them
    std::string buffer;
  };
  std::map<std::string, ipc_handle> m_ipc_handles;
  std::unique_ptr<copy_engine_executor> m_copies;
  struct named_copy {
    std::string name, call;
    uint64_t bytes = 0;
    bool async = false;
    size_t index = 0;  // in m_copies->times()
    size_t from = 0;   // in m_copies->times(): whose call it is timed from (its own, or `since`'s)
    bool from_completion = false;  // `after`: timed from that copy's completion, not its call
  };
  std::vector<named_copy> m_named_copies;
  std::vector<host_check> m_pending_checks;  // async copies into pinned memory
  struct registration {
    peer::kmd_region* region = nullptr;
    int pid = 0;  // whose cache holds it
  };
  std::map<std::string, registration> m_registered;  // by buffer
  std::map<std::string, registration> m_imported;    // dma-bufs the kernel driver imported, by
                                                     // region name
  struct descriptor {
    int fd = -1;           // -1: its export failed
    uint64_t address = 0;  // what was exported from
  };
  std::map<std::string, descriptor> m_descriptors;  // by name
  struct vmm_handle {
    CUmemGenericAllocationHandle handle = 0;
    uint64_t size = 0;
    std::vector<uint8_t> image;  // what the program put in it (its memory starts cleared)
  };
  std::map<std::string, vmm_handle> m_handles;  // by cuMemCreate's name
  // Per reserved buffer, the handles mapped in it, by offset.
  std::map<std::string, std::map<uint64_t, std::string>> m_mapped;
  // RDMA registration through nvidia-peermem (program_rdma_steps.cpp): the peer driver's device
  // as an RDMA device, with nvidia-peermem's two clients registered as the module does.
  // The clients outlive the core, whose end deregisters what is left through them.
  std::unique_ptr<peer::nvidia_peermem> m_nv_mem, m_nv_mem_nc;
  std::unique_ptr<peer::rdma_core> m_rdma;
  struct memory_region {
    peer::rdma_mr* mr = nullptr;  // nullptr: its registration failed, or it was deregistered
    uint32_t rkey = 0;  // as remote peers hold it: it outlives the region (0: none was given)
    uint64_t address = 0, size = 0;  // as registered
    uint64_t offset = 0;             // where in its buffer it starts
    int pid = 0;
  };
  std::map<std::string, memory_region> m_mrs;  // by ibv_reg_mr's name
  std::map<std::string, size_t> m_named_dma;
  std::vector<dma_result> m_dmas;
  std::map<std::string, bar1_peak> m_bar1_peak;            // per GPU
  std::vector<std::unique_ptr<pin_record>> m_pin_records;  // every pin made, never freed:
                                                           // free callbacks point at them
  std::map<std::string, pin_record*> m_pins;               // by name: the latest
  std::map<std::string, pci_dev> m_peer_devices;           // DMA engines as peers, by name
  std::map<std::string, stored_value> m_stored;
  nlohmann::json m_step_values;  // what the current step read (pointer attributes)
  std::string m_check;           // why the current step's check failed ("" when it passed)
  sc_core::sc_event m_dma_done;
  nlohmann::json m_steps = nlohmann::json::array();
  std::vector<std::string> m_errors;
  std::string m_doing = "starting";
};

}  // namespace p2psim::core
