// The probe's peer-access sequence (`probe --peer`, on a machine with two GPUs): whether each
// GPU may reach the other's memory, peer access enabled and disabled between two contexts with
// every misuse a program makes, and copies between the GPUs with and without it, their bytes
// checked. What a link's own figures are (its performance rank, native atomics) depends on
// whether NVLink or PCIe joins the GPUs, so those go on '#' lines, which the comparison with
// the model leaves out.
#include "probe.h"

namespace cuda_probe {

namespace {
// cuDeviceGetP2PAttribute's attributes (CUdevice_P2PAttribute).
constexpr int rank_attr = 1, access_attr = 2, atomic_attr = 3, array_attr = 4;
}  // namespace

void probe::peer_access() {
  line("== peer access");
  int v = -1;
  line("cuDeviceCanAccessPeer before cuInit -> " + res(cuDeviceCanAccessPeer(&v, 0, 1)));
  line("cuInit -> " + res(cuInit(0)));
  int n = -1;
  CUresult r = cuDeviceGetCount(&n);
  line(fmt("cuDeviceGetCount -> %s count=%d", res(r).c_str(), n));
  const int pairs[][2] = {{0, 1}, {1, 0}, {0, 0}, {0, 2}, {-1, 0}};
  for (const auto& p : pairs) {
    v = -1;
    r = cuDeviceCanAccessPeer(&v, p[0], p[1]);
    line(fmt("cuDeviceCanAccessPeer(%d, %d) -> %s value=%d", p[0], p[1], res(r).c_str(), v));
  }
  line("cuDeviceCanAccessPeer(NULL, 0, 1) -> " + res(cuDeviceCanAccessPeer(nullptr, 0, 1)));
  const int attrs[][3] = {{access_attr, 0, 1}, {access_attr, 1, 0}, {access_attr, 0, 0},
                          {access_attr, 0, 2}, {99, 0, 1},          {0, 0, 1}};
  for (const auto& a : attrs) {
    v = -1;
    r = cuDeviceGetP2PAttribute(&v, (CUdevice_P2PAttribute)a[0], a[1], a[2]);
    line(fmt("cuDeviceGetP2PAttribute(%d, %d, %d) -> %s value=%d", a[0], a[1], a[2], res(r).c_str(),
             v));
  }
  line("cuDeviceGetP2PAttribute(NULL, 2, 0, 1) -> " +
       res(cuDeviceGetP2PAttribute(nullptr, (CUdevice_P2PAttribute)access_attr, 0, 1)));
  int rank = -1, atomic = -1, array = -1;
  cuDeviceGetP2PAttribute(&rank, (CUdevice_P2PAttribute)rank_attr, 0, 1);
  cuDeviceGetP2PAttribute(&atomic, (CUdevice_P2PAttribute)atomic_attr, 0, 1);
  cuDeviceGetP2PAttribute(&array, (CUdevice_P2PAttribute)array_attr, 0, 1);
  line(fmt("# link 0 -> 1: performance_rank=%d native_atomic=%d cuda_array_access=%d", rank, atomic,
           array));

  CUcontext b = nullptr, a = nullptr;
  line("cuCtxCreate B on device 1 -> " + res(ctx_create(&b, 0, 1)));
  m_ctx.push_back({"B", b});
  line("cuCtxCreate A on device 0 -> " + res(ctx_create(&a, 0, 0)));
  m_ctx.push_back({"A", a});
  line("cuCtxEnablePeerAccess(B, flags=1) -> " + res(cuCtxEnablePeerAccess(b, 1)));
  line("cuCtxEnablePeerAccess(B) -> " + res(cuCtxEnablePeerAccess(b, 0)));
  line("cuCtxEnablePeerAccess(B) again -> " + res(cuCtxEnablePeerAccess(b, 0)));
  line("cuCtxEnablePeerAccess(A), A current -> " + res(cuCtxEnablePeerAccess(a, 0)));
  line("cuCtxEnablePeerAccess(NULL) -> " + res(cuCtxEnablePeerAccess(nullptr, 0)));
  CUcontext a2 = nullptr;
  line("cuCtxCreate A2 on device 0 -> " + res(ctx_create(&a2, 0, 0)));
  m_ctx.push_back({"A2", a2});
  line("cuCtxEnablePeerAccess(A), A2 current -> " + res(cuCtxEnablePeerAccess(a, 0)));
  line("cuCtxEnablePeerAccess(B), A2 current -> " + res(cuCtxEnablePeerAccess(b, 0)));
  line("cuCtxDestroy(A2) -> " + res(cuCtxDestroy(a2)));
  CUcontext cur = nullptr;
  r = cuCtxGetCurrent(&cur);
  line(fmt("cuCtxGetCurrent -> %s ctx=%s", res(r).c_str(), ctx_name(cur).c_str()));

  // Copies between the GPUs: A's buffer to B's, with peer access from A to B enabled.
  const size_t bytes = 1 * MiB;
  std::vector<unsigned char> pattern(bytes), back(bytes);
  for (size_t i = 0; i < bytes; ++i) pattern[i] = (unsigned char)(i * 7 + 3);
  const int x = alloc(bytes, " x in A");
  line("cuCtxSetCurrent(B) -> " + res(cuCtxSetCurrent(b)));
  m_prev = 0;
  const int y = alloc(bytes, " y in B");
  line("cuCtxSetCurrent(A) -> " + res(cuCtxSetCurrent(a)));
  m_prev = 0;
  if (x < 0 || y < 0) return;
  const CUdeviceptr xv = m_allocs[x].va, yv = m_allocs[y].va;
  auto check = [&](const std::string& what) {
    std::fill(back.begin(), back.end(), 0);
    const CUresult rr = cuMemcpyDtoH(back.data(), yv, bytes);
    line(fmt("%s: cuMemcpyDtoH(y) -> %s bytes_match=%s", what.c_str(), res(rr).c_str(),
             back == pattern ? "yes" : "no"));
  };
  line("cuMemcpyHtoD(x) -> " + res(cuMemcpyHtoD(xv, pattern.data(), bytes)));
  line("cuMemcpyDtoD(y, x), access A -> B -> " + res(cuMemcpyDtoD(yv, xv, bytes)));
  check("after cuMemcpyDtoD");
  line("cuMemcpyHtoD(y, zeros) -> " +
       res(cuMemcpyHtoD(yv, std::vector<unsigned char>(bytes).data(), bytes)));
  line("cuMemcpyPeer(y, B, x, A) -> " + res(cuMemcpyPeer(yv, b, xv, a, bytes)));
  check("after cuMemcpyPeer");
  line("cuMemcpyPeer(y, A, x, A) -> " + res(cuMemcpyPeer(yv, a, xv, a, bytes)));
  line("cuMemcpyPeer(y, NULL, x, A) -> " + res(cuMemcpyPeer(yv, nullptr, xv, a, bytes)));
  line("cuMemcpyPeer(y, B, x, B) -> " + res(cuMemcpyPeer(yv, b, xv, b, bytes)));
  line("cuMemcpyPeer(y, B, x, A, 0 bytes) -> " + res(cuMemcpyPeer(yv, b, xv, a, 0)));
  line("cuMemcpyPeer(y, B, x, A, 2 MiB) -> " + res(cuMemcpyPeer(yv, b, xv, a, 2 * MiB)));
  line("cuMemcpyHtoD(y, zeros) -> " +
       res(cuMemcpyHtoD(yv, std::vector<unsigned char>(bytes).data(), bytes)));
  line("cuMemcpyPeerAsync(y, B, x, A) -> " + res(cuMemcpyPeerAsync(yv, b, xv, a, bytes, nullptr)));
  line("cuCtxSynchronize -> " + res(cuCtxSynchronize()));
  check("after cuMemcpyPeerAsync");

  line("cuCtxDisablePeerAccess(B) -> " + res(cuCtxDisablePeerAccess(b)));
  line("cuCtxDisablePeerAccess(B) again -> " + res(cuCtxDisablePeerAccess(b)));
  line("cuCtxDisablePeerAccess(A), A current -> " + res(cuCtxDisablePeerAccess(a)));
  line("cuCtxDisablePeerAccess(NULL) -> " + res(cuCtxDisablePeerAccess(nullptr)));
  line("cuMemcpyHtoD(y, zeros) -> " +
       res(cuMemcpyHtoD(yv, std::vector<unsigned char>(bytes).data(), bytes)));
  line("cuMemcpyDtoD(y, x), no access -> " + res(cuMemcpyDtoD(yv, xv, bytes)));
  check("after cuMemcpyDtoD without access");

  // From B: access to A is B's own to enable, whatever A did.
  line("cuCtxSetCurrent(B) -> " + res(cuCtxSetCurrent(b)));
  line("cuCtxDisablePeerAccess(A), B current -> " + res(cuCtxDisablePeerAccess(a)));
  line("cuCtxEnablePeerAccess(A), B current -> " + res(cuCtxEnablePeerAccess(a, 0)));
  line("cuCtxSetCurrent(A) -> " + res(cuCtxSetCurrent(a)));
  line("cuCtxEnablePeerAccess(B) after disabling -> " + res(cuCtxEnablePeerAccess(b, 0)));

  // No current context.
  line("cuCtxSetCurrent(NULL) -> " + res(cuCtxSetCurrent(nullptr)));
  line("cuCtxSetCurrent(NULL) -> " + res(cuCtxSetCurrent(nullptr)));
  r = cuCtxGetCurrent(&cur);
  line(fmt("cuCtxGetCurrent -> %s ctx=%s", res(r).c_str(), ctx_name(cur).c_str()));
  line("cuCtxEnablePeerAccess(B) without context -> " + res(cuCtxEnablePeerAccess(b, 0)));
  line("cuCtxDisablePeerAccess(B) without context -> " + res(cuCtxDisablePeerAccess(b)));
  line("cuMemcpyPeer(y, B, x, A) without context -> " + res(cuMemcpyPeer(yv, b, xv, a, bytes)));
  line("cuCtxDestroy(A) -> " + res(cuCtxDestroy(a)));
  line("cuCtxDestroy(B) -> " + res(cuCtxDestroy(b)));
  line("== end");
}

void run_peer(const sink& out) {
  probe p(out);
  p.peer_access();
}

}  // namespace cuda_probe
