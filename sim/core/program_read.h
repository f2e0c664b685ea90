// What the program reader knows while it reads the steps in order: the names earlier steps
// made, so that a step naming anything else is refused at its line (program.cpp,
// program_read_api.cpp).
#pragma once

#include <map>
#include <set>
#include <string>

#include "sim/config/reader.h"
#include "sim/core/program.h"

namespace p2psim::core::detail {

struct program_names {
  std::set<std::string> processes;
  std::set<std::string> buffers;           // by cuMemAlloc
  std::set<std::string> host_buffers;      // by malloc, cuMemHostAlloc, cuMemAllocHost
  std::set<std::string> transfers;         // by dma steps with a name
  std::set<std::string> copies;            // by cuMemcpy steps with a name
  std::set<std::string> streams;           // by cuStreamCreate
  std::set<std::string> contexts;          // by cuCtxCreate with a name
  std::set<std::string> pins;              // by nvidia_p2p_get_pages(_persistent)
  std::set<std::string> stored;            // by `store` of a pointer attribute
  std::set<std::string> stored_tokens;     // the stored ones that hold P2P_TOKENS
  std::set<std::string> descriptors;       // by cuMemGetHandleForAddressRange
  std::set<std::string> regions;           // by dma_buf_import
  std::set<std::string> handles;           // by cuMemCreate
  std::set<std::string> reserved;          // the buffers cuMemAddressReserve named
  std::map<std::string, std::string> mrs;  // by ibv_reg_mr: each one's buffer
  std::set<std::string> ipc_handles;       // by cuIpcGetMemHandle
  bool peer_driver = false;                // the scenario has a `peer_driver` section
};

// The nv-p2p calls, the pointer attribute calls and the `callbacks` check.
bool is_api_call(const std::string& call);
const std::set<std::string>& api_calls();
// Reads the keys of such a step (process, expect and call are read already).
void read_api_step(const config::node_reader& r, step_spec& s, program_names& names);
// A `dma` step through a pin's bus addresses (`pin:` instead of `buffer:`).
void read_pin_dma(const config::node_reader& r, step_spec& s, program_names& names);
// The host memory calls: malloc, free, cuMemHostAlloc, cuMemAllocHost, cuMemFreeHost,
// cuMemHostRegister, cuMemHostUnregister (program_read_host.cpp).
bool is_host_call(const std::string& call);
// The dma-buf steps (program_read_dma_buf.cpp): export, close, import, release.
bool is_dma_buf_call(const std::string& call);
const std::set<std::string>& dma_buf_call_names();
void read_dma_buf_step(const config::node_reader& r, step_spec& s, program_names& names);
void read_host_step(const config::node_reader& r, step_spec& s, program_names& names);
// The VMM steps (program_read_vmm.cpp): create, release, reserve, free, map, unmap, access.
bool is_vmm_call(const std::string& call);
const std::set<std::string>& vmm_call_names();
void read_vmm_step(const config::node_reader& r, step_spec& s, program_names& names);
// The RDMA registration steps (program_read_rdma.cpp): ibv_reg_mr, ibv_dereg_mr; and a `dma`
// step through a memory region (`mr:` instead of `buffer:`), a remote peer's access.
bool is_rdma_call(const std::string& call);
const std::set<std::string>& rdma_call_names();
void read_rdma_step(const config::node_reader& r, step_spec& s, program_names& names);
void read_mr_dma(const config::node_reader& r, step_spec& s, program_names& names);
// The CUDA IPC steps (program_read_ipc.cpp): cuIpcGetMemHandle, cuIpcOpenMemHandle,
// cuIpcCloseMemHandle.
bool is_ipc_call(const std::string& call);
const std::set<std::string>& ipc_call_names();
void read_ipc_step(const config::node_reader& r, step_spec& s, program_names& names);
// What every `dma` step takes besides where it goes: op, count, every, wait and the ordering
// attributes (program.cpp).
void read_dma_options(const config::node_reader& r, step_spec& s);
// A name a step gives a buffer, a copy, a stream, ...: refused if taken (at `key`).
void claim_name(const config::node_reader& r, const std::string& key, const std::string& name,
                const program_names& names);
// "ok", an errno the nv-p2p API returns (-EINVAL, ...) or a CUresult name: what a step's
// `expect` may say. Fails at `key` otherwise.
void check_result_name(const config::node_reader& r, const std::string& key,
                       const std::string& value);

}  // namespace p2psim::core::detail
