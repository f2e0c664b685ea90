#include "tests/driver_ref/commands.h"

#include <fmt/format.h>

#include <cstring>

namespace p2psim::driver_ref {

namespace {
const char* const op_names[] = {"cuCtxCreate",
                                "cuCtxDestroy",
                                "cuCtxSetCurrent",
                                "cuMemAlloc",
                                "cuMemFree",
                                "exit",
                                "cuPointerGetAttribute",
                                "cuPointerGetAttributes",
                                "cuPointerSetAttribute",
                                "cuMemcpyHtoD",
                                "cuMemcpyDtoH",
                                "nvidia_p2p_get_pages",
                                "nvidia_p2p_get_pages_persistent",
                                "nvidia_p2p_put_pages",
                                "nvidia_p2p_put_pages_persistent",
                                "nvidia_p2p_free_page_table",
                                "nvidia_p2p_dma_map_pages",
                                "nvidia_p2p_dma_unmap_pages",
                                "nvidia_p2p_free_dma_mapping",
                                "peer write",
                                "peer read",
                                "kmd pin",
                                "kmd unpin",
                                "regcache acquire",
                                "regcache release",
                                "cuCtxEnablePeerAccess/cuCtxDisablePeerAccess",
                                "cuMemHost*",
                                "cuMemGetHandleForAddressRange",
                                "close(dma-buf)",
                                "dma-buf import (kernel driver)",
                                "cuMemCreate",
                                "cuMemRelease",
                                "cuMemAddressReserve",
                                "cuMemAddressFree",
                                "cuMemMap",
                                "cuMemUnmap",
                                "cuMemSetAccess",
                                "cuMemcpy (VMM)",
                                "nvidia_p2p_get_pages (VMM)",
                                "ibv_reg_mr",
                                "ibv_dereg_mr",
                                "remote access (RDMA)",
                                "cuDeviceCanAccessPeer",
                                "cuMemcpyDtoD / cuMemcpyPeer",
                                "cuIpcGetMemHandle",
                                "cuIpcOpenMemHandle",
                                "cuIpcCloseMemHandle",
                                "cuMemcpy (IPC)"};
static_assert(sizeof(op_names) / sizeof(*op_names) == size_t(op::count));

const char* const action_names[] = {"free_table",     "nothing",         "put_self",
                                    "get_pages_same", "get_pages_other", "put_other"};
static_assert(sizeof(action_names) / sizeof(*action_names) == size_t(callback_action::count));
}  // namespace

std::string describe(const command& c) {
  std::string s = fmt::format("{} proc={} variant={} a={} b={} c={}", op_names[size_t(c.what)],
                              c.proc, c.variant, c.a, c.b, c.c);
  if (c.what == op::get_pages || c.what == op::vmm_get_pages)
    s += fmt::format(" callback={}", action_names[size_t(c.action)]);
  return s;
}

std::string describe(const std::vector<command>& cs) {
  std::string s;
  for (size_t i = 0; i < cs.size(); ++i) s += fmt::format("  {:3}: {}\n", i + 1, describe(cs[i]));
  return s;
}

std::vector<command> decode(const uint8_t* data, size_t size) {
  std::vector<command> out;
  for (; size >= 16; data += 16, size -= 16) {
    command c;
    c.what = op(data[0] % uint8_t(op::count));
    c.proc = data[1];
    c.variant = data[2];
    c.action = callback_action(data[3] % uint8_t(callback_action::count));
    std::memcpy(&c.a, data + 4, 4);
    std::memcpy(&c.b, data + 8, 4);
    std::memcpy(&c.c, data + 12, 4);
    out.push_back(c);
  }
  return out;
}

}  // namespace p2psim::driver_ref
