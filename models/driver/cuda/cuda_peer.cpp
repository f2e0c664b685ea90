// Peer access between GPUs: whether one GPU may reach another's memory (the driver's
// `peer_reachable`, which the machine's builder sets from its topology), the per-context
// access cuCtxEnablePeerAccess grants, and copies between GPUs. Return codes and the order in
// which they are checked are libcuda 580's on two H200s (tests/data/cuda_probe/
// h200x2_cuda13_peer.txt): a context never has access to its own device, not even through
// another context on it (PEER_ACCESS_UNSUPPORTED); access is one context's to another, so
// each direction is enabled on its own; cuMemcpyPeer ignores the contexts it is given (UVA
// tells the GPUs apart) but needs a current one.
#include "models/driver/cuda/cuda_state.h"

using namespace p2psim::cuda::detail;

namespace {

bool valid_device(CUdevice dev) {
  return dev >= 0 && dev < installed_driver()->gpu_count();
}

bool reachable(CUdevice from, CUdevice to) {
  return from != to && installed_driver()->peer_reachable(from, to);
}

}  // namespace

CUresult cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
  if (CUresult r = check_init()) return r;
  if (!canAccessPeer) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev) || !valid_device(peerDev)) return CUDA_ERROR_INVALID_DEVICE;
  *canAccessPeer = reachable(dev, peerDev) ? 1 : 0;
  return CUDA_SUCCESS;
}

// Over PCIe p2psim gives every reachable pair rank 0 (the best; it has no other link to rank
// against), no native atomics (a PCIe peer write is not an atomic of the GPU's), and CUDA
// array access wherever there is access. The H200s recorded are joined by NVLink, so these
// three were not checked against PCIe peers.
CUresult cuDeviceGetP2PAttribute(int* value, CUdevice_P2PAttribute attrib, CUdevice srcDevice,
                                 CUdevice dstDevice) {
  if (CUresult r = check_init()) return r;
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(srcDevice) || !valid_device(dstDevice) || srcDevice == dstDevice)
    return CUDA_ERROR_INVALID_DEVICE;
  const int access = reachable(srcDevice, dstDevice) ? 1 : 0;
  switch (attrib) {
    case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK:
      *value = 0;
      break;
    case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
    case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED:
      *value = access;
      break;
    case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
      *value = 0;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags) {
  if (CUresult r = check_init()) return r;
  CUctx_st* c = current_context();
  CUctx_st* peer = live_context(peerContext);
  if (!c || !peer) return CUDA_ERROR_INVALID_CONTEXT;
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (!reachable(c->device, peer->device)) return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  if (!c->peers.insert(peer).second) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  return CUDA_SUCCESS;
}

CUresult cuCtxDisablePeerAccess(CUcontext peerContext) {
  if (CUresult r = check_init()) return r;
  CUctx_st* c = current_context();
  CUctx_st* peer = live_context(peerContext);
  if (!c || !peer) return CUDA_ERROR_INVALID_CONTEXT;
  if (c->peers.erase(peer) == 0) return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  return CUDA_SUCCESS;
}

CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext, CUdeviceptr srcDevice, CUcontext,
                      size_t ByteCount) {
  return cuMemcpyDtoD(dstDevice, srcDevice, ByteCount);
}

CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext, CUdeviceptr srcDevice, CUcontext,
                           size_t ByteCount, CUstream hStream) {
  return cuMemcpyDtoDAsync(dstDevice, srcDevice, ByteCount, hStream);
}
