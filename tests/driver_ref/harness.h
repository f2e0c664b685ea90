// Runs driver commands against p2psim's models (the CUDA API model, nv-p2p, the peer's kernel
// driver and registration cache) and the reference model in lockstep, and compares every
// return value, every callback, BAR1, and every byte a peer or a copy moved. A divergence is
// thrown as `divergence`, naming the step. Pure C++: no SystemC kernel; a peer's DMA reaches
// VRAM the way the GPU model decodes it (BAR1 window, BAR1 page table), through the IOMMU of
// the peer where it has one.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/driver/cuda/cuda.h"
#include "models/driver/kernel/kernel.h"
#include "models/driver/nvidia/nv-p2p.h"
#include "models/driver/peer/kmd.h"
#include "models/driver/peer/nvidia_peermem.h"
#include "models/driver/peer/peer_memory.h"
#include "models/driver/peer/regcache.h"
#include "models/iommu/iommu.h"
#include "tests/conformance/fixture.h"
#include "tests/driver_ref/commands.h"
#include "tests/driver_ref/reference.h"

namespace p2psim::driver_ref {

struct divergence : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct harness_config {
  ref_config ref;
  int processes = 3;
  bool contexts_first = false;  // the property test's op mix: more contexts and peer access
  bool vmm_first = false;       // ... VMM calls ten times as often
  bool rdma_first = false;      // ... RDMA registrations and accesses ten times as often
  bool ipc_first = false;       // ... CUDA IPC calls ten times as often
  bool dma_buf_first = false;   // ... dma-buf exports, imports and releases ten times as often
};

class harness {
 public:
  explicit harness(const harness_config& c = {});
  ~harness();
  harness(const harness&) = delete;
  harness& operator=(const harness&) = delete;

  // Runs one command; throws divergence.
  void run(const command& c);
  // Runs them all, then compares all of VRAM.
  void run_all(const std::vector<command>& cs);
  void check_all_vram();
  size_t steps() const { return m_step; }
  // How often each interesting thing happened (that the sequences reach what they should).
  const std::map<std::string, size_t>& counts() const { return m_counts; }
  const reference& ref() const { return m_ref; }

  static void callback_trampoline(void* data);

 private:
  struct sut_pin {
    nvidia_p2p_page_table_t* table = nullptr;
    std::vector<uint64_t> bus;  // the entries' physical addresses, kept past the table's life
  };
  struct sut_mapping {
    nvidia_p2p_dma_mapping_t* mapping = nullptr;
    pci_dev* peer = nullptr;
    int pin = 0;
  };
  struct sut_region {
    peer::kmd_region* region = nullptr;
    nvidia_p2p_page_table_t* table = nullptr;
    int kmd = 0, pin = 0, mapping = -1, pid = 0;
    bool alive = true;
    int dma_buf_export = -1;  // an imported dma-buf: the export it maps
  };
  struct sut_mr {  // a memory region nvidia-peermem registered
    peer::rdma_mr* mr = nullptr;
    uint32_t rkey = 0;  // as remote peers hold it: it outlives the region
    int pin = 0, mapping = 0, peer = 0, pid = 0;
    uint64_t address = 0, size = 0, first_page = 0;
    bool alive = true;  // not deregistered
  };
  struct process_slot {
    int pid = 0;
    std::vector<int> stack;  // the context stack (the reference's indexes); the top is current
    std::unique_ptr<peer::regcache> cache;
    std::vector<int> acquired;  // regions handed out by the cache, not yet released
    uint8_t* arena = nullptr;   // pageable memory of its own, for cuMemHostRegister
  };
  struct callback_data {
    harness* h;
    int pin;
  };
  struct observed_callback {
    int pin = 0, result = 0;
  };

  [[noreturn]] void fail(const std::string& what) const;
  void expect(bool ok, const std::string& what) const;
  void expect_eq(long long got, long long want, const std::string& what) const;

  process_slot& slot(const command& c);
  int current(const process_slot& s) const;  // the current context, if alive; else -1
  void new_process(process_slot& s);
  int pick(uint32_t index, size_t count) const { return count ? int(index % count) : -1; }
  int own_pin(uint32_t index) const;

  void ctx_create(const command& c);
  void ctx_destroy(const command& c);
  void ctx_set_current(const command& c);
  void ctx_peer_access(const command& c);
  void can_access_peer(const command& c);  // harness_peer.cpp
  void peer_copy(const command& c);
  static bool peer_reachable(int from, int to);
  void mem_alloc(const command& c);
  void mem_free(const command& c);
  void process_exit(const command& c);
  void get_attribute(const command& c);
  void get_attributes(const command& c);
  void set_sync_memops(const command& c);
  void memcpy_command(const command& c, bool to_device);
  void get_pages(const command& c, bool persistent);
  void put_pages(const command& c);
  void put_pages_persistent(const command& c);
  void free_page_table(const command& c);
  void dma_map(const command& c);
  void dma_unmap(const command& c);
  void free_dma_mapping(const command& c);
  void peer_access(const command& c, bool write);
  void kmd_pin(const command& c);
  void kmd_unpin(const command& c);
  void regcache_acquire(const command& c);
  void regcache_release(const command& c);
  void host_memory(const command& c);
  void dma_buf_export(const command& c);
  void dma_buf_close(const command& c);
  void dma_buf_import(const command& c);  // harness_dma_buf_import.cpp
  // CUDA VMM (harness_vmm.cpp).
  void vmm_create(const command& c);
  void vmm_release(const command& c);
  void vmm_reserve(const command& c);
  void vmm_free(const command& c);
  void vmm_map(const command& c);
  void vmm_unmap(const command& c);
  void vmm_access(const command& c);
  void vmm_copy(const command& c);
  void vmm_get_pages(const command& c);
  // The process's own handles, reservations and live mappings (the reference's indexes).
  std::vector<int> own_handles(int pid) const;
  std::vector<int> own_reservations(int pid) const;
  std::vector<int> own_mappings(int pid) const;
  // Whether any byte of [va, va + bytes) of `pid` is VMM memory: the commands written for
  // cuMemAlloc memory leave such pointers to the VMM ones (another process's allocation may
  // lie at the same VA as this one's mapping).
  bool vmm_in(int pid, uint64_t va, uint64_t bytes) const;
  // RDMA registration through nvidia-peermem (harness_rdma.cpp).
  void rdma_reg(const command& c);
  void rdma_dereg(const command& c);
  void rdma_access(const command& c);
  void sync_mrs();  // each live region invalidated exactly when its pin was revoked
  // CUDA IPC (harness_ipc.cpp).
  void ipc_get(const command& c);
  void ipc_open(const command& c);
  void ipc_close(const command& c);
  void ipc_copy(const command& c);
  // Whether any byte of [va, va + bytes) of `pid` is another process's memory it opened.
  bool imported_in(int pid, uint64_t va, uint64_t bytes) const;

  // Frees through the models while the reference's script of callbacks is followed.
  void with_script(std::vector<expected_callback> script, int pid,
                   const std::function<CUresult()>& sut_call);
  void on_callback(int pin);
  int record_pin(nvidia_p2p_page_table_t* table);  // a new SUT pin, at the reference's index
  void learn_pins();
  void sync_regions(int kmd_index);
  void check_state();
  int pick_allocation(const command& c) const;
  uint64_t pointer_of(const command& c, int alloc, uint8_t kind) const;
  std::pair<uint64_t, uint32_t> tokens_for(int ctx);
  // A peer's access to bus address `a` (or IOVA through `peer`): GPU and VRAM offset, if any.
  std::optional<std::pair<int, uint64_t>> sut_resolve(uint64_t a, pci_dev* peer);
  std::optional<std::pair<int, uint64_t>> ref_resolve(uint64_t a, int peer) const;
  void compare_frames(const std::set<std::pair<int, uint64_t>>& frames);
  // A copy of `host` to (or from) [ptr, ptr + size) of `pid` that the models did: the reference's
  // VRAM takes the bytes (or must hold them), then the frames touched are compared.
  void copied(int pid, uint64_t ptr, const std::vector<uint8_t>& host, bool to_device,
              const char* name);

  harness_config m_config;
  test::world m_world;
  reference m_ref;
  iommu::iommu_domain m_iommu;
  pci_dev m_nic0, m_nic1;  // nic0: no IOMMU; nic1: behind a translating one
  std::vector<std::unique_ptr<peer::kmd>> m_kmds;
  std::vector<process_slot> m_slots;
  int m_next_pid = 100;
  std::vector<CUcontext> m_contexts;  // by the reference's index
  std::vector<sut_pin> m_pins;        // by the reference's index
  std::vector<sut_mapping> m_mappings;
  std::vector<sut_region> m_regions;
  // The RDMA core with nvidia-peermem's clients (the clients outlive the core).
  std::unique_ptr<peer::nvidia_peermem> m_nv_mem, m_nv_mem_nc;
  std::unique_ptr<peer::rdma_core> m_rdma;
  std::vector<sut_mr> m_mrs;
  std::vector<CUipcMemHandle> m_ipc_handles;  // by the reference's export index
  // The IOVA of each page of an imported dma-buf behind nic1's IOMMU, by its pin.
  std::vector<std::pair<int, std::vector<uint64_t>>> m_import_iovas;
  std::vector<int> m_descriptors;                           // by the reference's export index
  std::vector<CUmemGenericAllocationHandle> m_vmm_handles;  // by the reference's handle index
  std::deque<callback_data> m_callback_data;
  std::vector<expected_callback> m_script;
  size_t m_script_pos = 0;
  std::vector<observed_callback> m_observed;
  size_t m_step = 0;
  std::map<std::string, size_t> m_counts;
  std::string m_current;  // the command being run, for messages
};

}  // namespace p2psim::driver_ref
