// The calls the driver property test makes, as plain data: RapidCheck generates and shrinks
// sequences of them, the libFuzzer target decodes them from bytes, and the harness runs each
// against p2psim's driver models and the reference model. Targets (contexts, allocations,
// pins, mappings, regions) are picked by index modulo what exists when the command runs, so
// every sequence, however shrunk or mutated, is meaningful.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace p2psim::driver_ref {

enum class op : uint8_t {
  ctx_create,       // cuCtxCreate(proc, gpu = a)
  ctx_destroy,      // cuCtxDestroy(context a), by proc (maybe not its owner)
  ctx_set_current,  // cuCtxSetCurrent(context a)
  mem_alloc,        // cuMemAlloc(size decoded from variant, b, c)
  mem_free,         // cuMemFree(allocation a; variant: base, interior, past the end, NULL)
  process_exit,     // the process exits; its slot gets a new process
  get_attribute,    // cuPointerGetAttribute(variant's attribute, pointer from allocation a)
  get_attributes,   // cuPointerGetAttributes(BUFFER_ID, SYNC_MEMOPS, RANGE_SIZE, ordinal)
  set_sync_memops,  // cuPointerSetAttribute(SYNC_MEMOPS = b & 1)
  memcpy_htod,      // cuMemcpyHtoD: a pattern into allocation a at b, c bytes
  memcpy_dtoh,      // cuMemcpyDtoH: read it back, compared with what was written
  get_pages,        // nvidia_p2p_get_pages(tokens: variant; range from a, b, c; callback: action)
  get_pages_persistent,
  put_pages,             // nvidia_p2p_put_pages(pin a; variant: tokens, va, NULL)
  put_pages_persistent,  // nvidia_p2p_put_pages_persistent(pin a; variant: flags, NULL)
  free_page_table,       // nvidia_p2p_free_page_table(pin a)
  dma_map,               // nvidia_p2p_dma_map_pages(peer: variant, pin a)
  dma_unmap,             // nvidia_p2p_dma_unmap_pages(mapping a; variant: peer, NULLs)
  free_dma_mapping,      // nvidia_p2p_free_dma_mapping(mapping a)
  peer_write,            // the peer writes through pin / mapping / region a's bus addresses
  peer_read,             // ... and reads
  kmd_pin,               // the peer's kernel driver pins allocation a's [b, b + c)
  kmd_unpin,             // ... unpins region a
  regcache_acquire,      // the process's registration cache: [b, b + c) of allocation a
  regcache_release,      // ... done with acquired region a
  ctx_peer_access,       // cuCtxEnablePeerAccess (variant even; 4: flags 1) or
                         // cuCtxDisablePeerAccess (odd) of context a, from the current one
  host_memory,           // page-locked host memory; variant % 5: cuMemHostAlloc,
                         // cuMemHostRegister, cuMemHostUnregister, cuMemFreeHost,
                         // cuMemHostGetFlags (targets and sizes from a, b, c)
  dma_buf_export,        // cuMemGetHandleForAddressRange(DMA_BUF_FD) of allocation a; variant
                         // % 6: whole, a part from b of c bytes, misaligned, size 0, PCIe
                         // flag, flags 2
  dma_buf_close,         // close(export a's descriptor); variant odd: from another process
  dma_buf_import,        // the kernel driver (variant even: nic0; odd: nic1, behind an IOMMU)
                         // imports export a's descriptor, as its process
  vmm_create,            // cuMemCreate(GPU a, size by variant % 4: 2, 2, 4, 3 MiB; RDMA: b & 1)
  vmm_release,           // cuMemRelease(handle a of the process; variant % 6 == 5: handle 0)
  vmm_reserve,           // cuMemAddressReserve((b % 3 + 1) x 2 MiB; variant % 5: 3 a hint at
                         // reservation c, 4 a size of 1 MiB)
  vmm_free,              // cuMemAddressFree(reservation a; variant odd: 2 MiB too many)
  vmm_map,               // cuMemMap(reservation a at (b % its 2 MiB slots) x 2 MiB, handle c)
  vmm_unmap,             // cuMemUnmap(reservation a from slot b; variant % 3: 2 MiB, the
                         // rest, 4 MiB)
  vmm_access,            // cuMemSetAccess(mapping a; GPU: mostly the current context's;
                         // variant % 5: rw, rw, read, none, 2)
  vmm_copy,              // cuMemcpyHtoD (variant even) / DtoH: mapping a at b, 1 + c % 700
  vmm_get_pages,         // nvidia_p2p_get_pages on mapping a; variant % 3: the current
                         // context's tokens, none, persistent; b odd: its first page only
  rdma_reg,              // ibv_reg_mr through nvidia-peermem of allocation a's [b, b + c)
                         // (size 0 sometimes); variant % 4 == 3: without invalidation support;
                         // (variant / 4) odd: the device behind the IOMMU
  rdma_dereg,            // ibv_dereg_mr of memory region a (a deregistered one: NULL)
  rdma_access,           // a remote write (variant even) or read through region a at b, 1 +
                         // c % 512 bytes; variant % 8 == 7: up to a page past its end
  can_access_peer,       // cuDeviceCanAccessPeer(a % (GPUs + 1), b % (GPUs + 1))
  peer_copy,             // cuMemcpyDtoD (variant even) / cuMemcpyPeer from allocation a to
                         // allocation b, offsets and size from c, maybe past their ends
  ipc_get,               // cuIpcGetMemHandle of allocation a at b (variant % 8 == 7: its end)
  ipc_open,              // cuIpcOpenMemHandle of handle a; variant % 8: 5 flags without bit 0,
                         // 6 more bits, 7 bytes no export has
  ipc_close,             // cuIpcCloseMemHandle of open import a (variant % 6 == 5: interior)
  ipc_copy,              // cuMemcpyHtoD (variant even) / DtoH through open import a at b
  count
};

// What a free callback does besides being counted (it runs inside cuMemFree, cuCtxDestroy or
// the exit: guide 5.3), including calls back into the nv-p2p API.
enum class callback_action : uint8_t {
  free_table,       // nvidia_p2p_free_page_table, as the guide's sample (6.4)
  nothing,          // returns at once
  put_self,         // nvidia_p2p_put_pages on its own table (wrong, tolerated since R535)
  get_pages_same,   // pins its own range again: pages being freed cannot be pinned
  get_pages_other,  // pins another live allocation of the freeing process
  put_other,        // releases another pin of the freeing process's memory
  count
};

struct command {
  op what = op::ctx_create;
  uint8_t proc = 0;     // process slot
  uint8_t variant = 0;  // the op's sub-choice
  callback_action action = callback_action::free_table;
  uint32_t a = 0, b = 0, c = 0;
};

std::string describe(const command& c);
std::string describe(const std::vector<command>& cs);

// The fuzzer's encoding: 16 bytes a command.
std::vector<command> decode(const uint8_t* data, size_t size);

}  // namespace p2psim::driver_ref
