// A scenario's program: simulated processes calling the CUDA driver API and a third-party
// driver (pin / unpin through its registration cache, DMA into and out of pinned GPU
// memory), step by step in simulated time. Parsed here; run by program_runner.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/reader.h"
#include "sim/config/source_loc.h"
#include "sim/topology/topology.h"

namespace p2psim::core {

struct driver_spec {           // the NVIDIA driver model (models/driver/nvidia)
  bool bar1_sharing = true;    // CUDA 7.0+; false: CUDA 6.0 (guide 4.7, 4.8)
  bool null_callback = false;  // drivers before R535 accepted NULL (guide 4.2)
  double pin_ns = 10'000;      // per nvidia_p2p_get_pages (guide 5.1: up to milliseconds)
  double pin_page_ns = 1'000;  // plus per 64 KiB page
  double unpin_ns = 5'000;
};

struct peer_spec {     // the DMA device's kernel driver and registration cache (models/driver/peer)
  std::string device;  // a DMA engine of the topology
  std::string dma_map = "auto";  // auto (when its IOMMU translates) | true | false
  std::string path = "nv_p2p";   // how it gets GPU memory: nv_p2p | dma_buf (guide 4.1)
  bool cache = true;             // registration cache with lazy unpinning
  bool tag_check = true;         // buffer-ID check on every reuse (guide 6.5)
  uint64_t max_pinned = 0;       // bytes per process; 0: only BAR1 exhaustion evicts
  uint64_t max_entries = 0;      // regions per process; 0: no limit
  std::string policy = "lru";    // which unused region is evicted first: lru | fifo
  bool wait_in_callback = true;  // false: a driver that does not wait for in-flight DMA
  config::source_loc loc;
};

// What a cuPointerGetAttribute(s) value must be (docs/formats-scenario.md, "Pointer
// attributes"). P2P_TOKENS compares both tokens.
struct value_spec {
  enum class kind {
    any,          // no check
    number,       // a number, true / false (1 / 0), a CU_MEMORYTYPE_* name, NULL (0)
    buffer,       // an earlier buffer's address + offset
    same_as,      // the value an earlier attribute stored under `ref`
    differs_from  // anything but that value
  };
  kind what = kind::any;
  uint64_t number = 0;
  std::string ref;      // buffer, same_as, differs_from: the name
  uint64_t offset = 0;  // buffer: added to its address
};

// One attribute of a cuPointerGetAttribute(s) step.
struct attribute_spec {
  int attribute = 0;  // CUpointer_attribute
  std::string name;   // as written: BUFFER_ID, CU_POINTER_ATTRIBUTE_BUFFER_ID or a number
  value_spec value;
  std::string store;  // non-empty: the value read is kept under this name
};

// The tokens an nv-p2p call passes (guide 5.6, 7.2).
struct tokens_spec {
  enum class kind {
    zero,       // 0, 0: the caller's own memory
    named,      // stored by an earlier cuPointerGetAttribute(s) of P2P_TOKENS
    literal,    // written as numbers
    of_the_pin  // put_pages: those the pin was made with (the default there)
  };
  kind what = kind::zero;
  std::string name;
  uint64_t p2p_token = 0;
  uint32_t va_space_token = 0;
};

// One call of the program. `expect` is what it must return ("ok" = CUDA_SUCCESS or 0).
struct step_spec {
  std::string process;  // "" for sleep / wait / callbacks steps
  std::string call;     // cuInit, cuCtxCreate, cuCtxDestroy, cuMemAlloc, cuMemFree,
                        // cuPointer{Get,Set}Attribute, cuPointerGetAttributes,
                        // cuMemcpyHtoD, cuMemcpyDtoH, cuMemcpyDtoD, cuCtxSynchronize,
                        // cuStreamCreate, cuStreamSynchronize, cuCtxSetCurrent,
                        // cuCtxEnablePeerAccess, cuCtxDisablePeerAccess,
                        // nvidia_p2p_*, callbacks, register, deregister, dma, wait_dma,
                        // ibv_reg_mr, ibv_dereg_mr, sleep, exit; the fault link_down
  std::string device;   // cuCtxCreate: a GPU; link_down: the node below the link
  std::string context;  // cuCtxSetCurrent, cuCtx{Enable,Disable}PeerAccess: a cuCtxCreate's name
  std::string buffer;   // the name a cuMemAlloc gave
  std::string to;       // cuMemcpyDtoD: the destination buffer
  std::string name;     // cuMemAlloc: names the buffer; dma, cuMemcpy*: the transfer;
                        // cuCtxCreate (optional): the context
  uint64_t size = 0, offset = 0;
  bool write = true;         // dma: seen from the DMA device
  int count = 1;             // dma: repetitions; callbacks: how many must have run
  double every_ns = 0;       // dma: one repetition starts every this often (0: back to back)
  bool wait = true;          // dma: wait for it (false: it runs while the program goes on)
  bool async = false;        // cuMemcpy*: the Async form
  std::string stream;        // cuMemcpy* Async, cuStreamSynchronize: a cuStreamCreate's
                             // name ("" = the NULL stream)
  std::string since;         // a named cuMemcpy*: timed from the call of this earlier one
  std::string after;         // a named cuMemcpy*: timed from the completion of this earlier one
  bool pinned = false;       // cuMemcpyHtoD/DtoH: host memory from cuMemAllocHost
  std::string host_buffer;   // cuMemcpyHtoD/DtoH: a named host buffer (`host: NAME`)
  uint64_t host_offset = 0;  // and where in it
  std::string socket;        // malloc, cuMemHostAlloc, cuMemAllocHost: whose memory ("" = the
                             // first socket's)
  bool relaxed_ordering = false;  // dma: attributes of the device's requests
  bool id_based_ordering = false;
  double time_ns = 0;  // sleep
  // Raw nv-p2p calls and pointer attributes (program_read_api.cpp).
  std::string pin;            // a pin's name: get_pages names it, later steps use it
  std::string fd;             // close, dma_buf_import: a descriptor's name
  std::string region;         // dma_buf_release, dma: an imported region's name
  std::string handle;         // cuMemMap, cuMemRelease: a cuMemCreate's name;
                              // cuIpcOpenMemHandle: a cuIpcGetMemHandle's
  std::string mr;             // ibv_dereg_mr, dma: an ibv_reg_mr's name
  bool invalidation = true;   // ibv_reg_mr: the device's driver can stop the region when asked
  std::string access = "rw";  // cuMemSetAccess: rw | read | none
  uint64_t align = 0;         // cuMemAddressReserve (0: the granularity)
  bool rdma = false;          // cuMemCreate: gpuDirectRDMACapable
  bool null_pin = false;      // `pin: NULL`: the page table pointer is NULL
  bool has_va = false;        // va: (nv-p2p calls) or ptr: (pointer attributes) instead of buffer
  uint64_t va = 0;
  bool has_size = false;                // size: was written
  tokens_spec tokens;                   // get_pages, put_pages
  std::string callback = "free_table";  // get_pages: what its free callback does
  std::string callback_buffer;          // callback get_pages: pins this buffer ("" = its own range)
  uint32_t flags = 0;                   // the persistent calls, cuMemHost{Alloc,Register},
                                        // cuIpcOpenMemHandle
  std::string peer;                     // dma_map / dma_unmap / dma through a pin: a DMA engine
                                        // ("" = the peer_driver's device)
  bool null_peer = false;               // `peer: NULL`
  std::string mapping;        // dma_unmap / free_dma_mapping: whose mapping ("" = `peer`'s)
  bool null_mapping = false;  // `mapping: NULL`
  std::vector<attribute_spec> attributes;  // cuPointerGetAttribute: one; ...Attributes: several
  uint32_t set_value = 1;                  // cuPointerSetAttribute
  bool verify = true;                      // dma through a pin: compare every byte with VRAM
  std::string returned;  // callbacks: what the call inside the last callback returned ("" = any)
  std::string expect = "ok";
  config::source_loc loc;
};

struct program_spec {
  driver_spec driver;
  std::optional<peer_spec> peer;
  std::vector<std::string> processes;
  std::vector<step_spec> steps;
  bool empty() const { return steps.empty(); }
};

// Reads `driver`, `peer_driver`, `processes` and `program` from a scenario's root map.
program_spec read_program(const config::node_reader& root);

// Throws config::error when the program names devices the topology does not have (or of
// the wrong kind).
void check_program(const program_spec& p, const topo::topology& t);

// The keys read_program reads at the top level of a scenario.
inline constexpr const char* program_keys[] = {"driver", "peer_driver", "processes", "program"};

}  // namespace p2psim::core
