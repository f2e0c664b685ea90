// The VMM sequence's shareable handles, destroyed contexts and the calls whose outcome the
// reference leaves undefined, and the sequence in order (probe_vmm.h).
#include "probe_vmm.h"

namespace cuda_probe::vmm {

void vmm_sequence::sharing() {
  line("== shareable handles, retain, properties");
  const CUmemGenericAllocationHandle hp = create(hn(), 2 * MiB, dev_prop(0, 1));
  const CUmemGenericAllocationHandle hnn = create(hn(), 2 * MiB, dev_prop(0, 0));
  int fd = -1;
  if (hp) {
    props(hp);
    const CUresult r =
        cuMemExportToShareableHandle(&fd, hp, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    line(fmt("cuMemExportToShareableHandle(%s, POSIX_FD, flags=0) -> %s%s", hname(hp).c_str(),
             res(r).c_str(), r == CUDA_SUCCESS ? (fd >= 0 ? " fd>=0" : " fd<0") : ""));
    if (r == CUDA_SUCCESS) line(fmt("# fd=%d", fd));
    int fd2 = -1;
    CUresult r2 =
        cuMemExportToShareableHandle(&fd2, hp, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    line(fmt("cuMemExportToShareableHandle(%s, POSIX_FD, flags=0) again -> %s%s", hname(hp).c_str(),
             res(r2).c_str(), r2 == CUDA_SUCCESS ? (fd2 == fd ? " fd=same" : " fd=other") : ""));
    if (r2 == CUDA_SUCCESS && fd2 >= 0 && fd2 != fd) named_memory::fd_close(fd2);
    int fd3 = -1;
    r2 = cuMemExportToShareableHandle(&fd3, hp, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 1);
    line(fmt("cuMemExportToShareableHandle(%s, POSIX_FD, flags=1) -> %s", hname(hp).c_str(),
             res(r2).c_str()));
    if (r2 == CUDA_SUCCESS && fd3 >= 0) named_memory::fd_close(fd3);
    unsigned char buf[64] = {};
    for (int t : {0, 8}) {
      r2 = cuMemExportToShareableHandle(buf, hp, (CUmemAllocationHandleType)t, 0);
      line(fmt("cuMemExportToShareableHandle(%s, type=%d, flags=0) -> %s", hname(hp).c_str(), t,
               res(r2).c_str()));
    }
    line(fmt(
        "cuMemExportToShareableHandle(NULL, %s, POSIX_FD, flags=0) -> %s", hname(hp).c_str(),
        res(cuMemExportToShareableHandle(nullptr, hp, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0))
            .c_str()));
  }
  if (hnn) {
    int f = -1;
    const CUresult r =
        cuMemExportToShareableHandle(&f, hnn, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    line(fmt("cuMemExportToShareableHandle(%s, POSIX_FD, flags=0) created without it -> %s",
             hname(hnn).c_str(), res(r).c_str()));
    if (r == CUDA_SUCCESS && f >= 0) named_memory::fd_close(f);
  }
  {
    int f = -1;
    line("cuMemExportToShareableHandle(0, POSIX_FD, flags=0) -> " +
         res(cuMemExportToShareableHandle(&f, 0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)));
  }
  // Import in the same process.
  const int z = reserve("Z", 4 * MiB, 0);
  if (fd >= 0 && z >= 0) {
    const CUdeviceptr zb = base(z);
    const bool w = map(zb, 2 * MiB, 0, hp) == CUDA_SUCCESS && rw(zb, 2 * MiB) == CUDA_SUCCESS &&
                   put(zb, 2 * MiB, 13, " through the exported handle") == CUDA_SUCCESS;
    CUmemGenericAllocationHandle hi = 0;
    CUresult r = cuMemImportFromShareableHandle(&hi, (void*)(uintptr_t)fd,
                                                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    std::string s = "cuMemImportFromShareableHandle(fd, POSIX_FD) -> " + res(r);
    if (r == CUDA_SUCCESS) s += " handle=" + got_handle(hi, hn(), 2 * MiB);
    line(s);
    CUmemGenericAllocationHandle hi2 = 0;
    r = cuMemImportFromShareableHandle(&hi2, (void*)(uintptr_t)fd,
                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    s = "cuMemImportFromShareableHandle(fd, POSIX_FD) again -> " + res(r);
    if (r == CUDA_SUCCESS) s += " handle=" + got_handle(hi2, hn(), 2 * MiB);
    line(s);
    line("close(fd) -> " + std::string(named_memory::fd_close(fd) == 0 ? "0" : "-1"));
    if (hi) {
      props(hi, " imported");
      if (map(zb + 2 * MiB, 2 * MiB, 0, hi, 0, " the imported handle") == CUDA_SUCCESS &&
          rw(zb + 2 * MiB, 2 * MiB) == CUDA_SUCCESS && w)
        check(zb + 2 * MiB, 2 * MiB, 13, 0, " through the imported handle");
      attr(a_buffer_id, zb, " exported handle's mapping");
      attr(a_buffer_id, zb + 2 * MiB, " imported handle's mapping");
      attr(a_block_id, zb, " exported handle's mapping");
      attr(a_block_id, zb + 2 * MiB, " imported handle's mapping");
      attr(a_handle_types, zb, " exported handle's mapping");
      attr(a_handle_types, zb + 2 * MiB, " imported handle's mapping");
      retain(zb + 2 * MiB + MiB, hn(), " imported handle's mapping");
      unmap(zb + 2 * MiB, 2 * MiB);
    }
    if (hi2 && hi2 != hi) release(hi2, " the second import");
    if (hi) release(hi, " the import");
    if (hi && hi2 == hi) release(hi2, " the second import (same handle)");
    unmap(zb, 2 * MiB);
  }
  {
    CUmemGenericAllocationHandle h = 0;
    for (int bad : {-1, 9999}) {
      const CUresult r = cuMemImportFromShareableHandle(&h, (void*)(intptr_t)bad,
                                                        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
      line(fmt("cuMemImportFromShareableHandle(fd=%d, POSIX_FD) -> %s", bad, res(r).c_str()));
    }
    // On the model this is a descriptor the simulated process does not have open: a file
    // CUDA did not make, to the driver.
    const int dn = open("/dev/null", O_RDONLY);
    const CUresult r = cuMemImportFromShareableHandle(&h, (void*)(intptr_t)dn,
                                                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    line("cuMemImportFromShareableHandle(fd of /dev/null, POSIX_FD) -> " + res(r));
    if (dn >= 0) close(dn);
  }
  // Retain on mapped VAs, interior, unmapped, never reserved.
  if (z >= 0 && hnn) {
    const CUdeviceptr zb = base(z);
    map(zb, 2 * MiB, 0, hnn);
    retain(zb, hn(), " mapped start");
    retain(zb + MiB + 4 * KiB, hn(), " mapped interior");
    retain(zb + 2 * MiB, hn(), " unmapped, in the reservation");
    {
      CUmemGenericAllocationHandle h = 0;
      line("cuMemRetainAllocationHandle(null) -> " + res(cuMemRetainAllocationHandle(&h, nullptr)));
      line("cuMemRetainAllocationHandle(NULL handle, Z) -> " +
           res(cuMemRetainAllocationHandle(nullptr, (void*)(uintptr_t)zb)));
    }
    // A retained reference keeps the handle: release the original, the retained one stays.
    CUmemGenericAllocationHandle h = 0;
    const CUresult r = cuMemRetainAllocationHandle(&h, (void*)(uintptr_t)zb);
    line(fmt("cuMemRetainAllocationHandle(Z) kept -> %s handle=%s", res(r).c_str(),
             h == hnn ? "same" : "other"));
    release(hnn, " the original, a retained reference left");
    props(hnn, " one reference left");
    if (r == CUDA_SUCCESS) {
      // Restore the record so that the retained reference can be released by name.
      m_handles.push_back({hname(hnn), h, 2 * MiB, true});
      release(h, " the retained reference");
    }
    unmap(zb, 2 * MiB);
  } else if (hnn) {
    release(hnn);
  }
  if (hp)
    line("cuMemGetAllocationPropertiesFromHandle(NULL, " + hname(hp) + ") -> " +
         res(cuMemGetAllocationPropertiesFromHandle(nullptr, hp)));
  if (hp) release(hp);
  if (z >= 0) addr_free(base(z), 4 * MiB);
  props(0, " handle 0");
}

void vmm_sequence::destroyed_context() {
  line("== cuCtxDestroy with mappings live");
  const CUmemAllocationProp p = dev_prop();
  CUcontext d = new_context("D");
  const int rd = reserve("RD", 4 * MiB, 0);
  const CUmemGenericAllocationHandle hd = create(hn(), 2 * MiB, p);
  const CUmemGenericAllocationHandle hd2 = create(hn(), 2 * MiB, p);
  bool ok = false, written = false;
  if (rd >= 0 && hd && hd2) {
    ok = map(base(rd), 2 * MiB, 0, hd) == CUDA_SUCCESS;
    written =
        ok && rw(base(rd), 2 * MiB) == CUDA_SUCCESS && put(base(rd), 2 * MiB, 14) == CUDA_SUCCESS;
    attr(a_context, base(rd), " in D");
  }
  line("cuCtxDestroy(D) -> " + res(cuCtxDestroy(d)));
  current();
  line("cuCtxSetCurrent(C) -> " + res(cuCtxSetCurrent(m_c)));
  if (ok) {
    const CUdeviceptr b = base(rd);
    attrs(b, false, " after cuCtxDestroy(D)");
    attr(a_device_ordinal, b, " after cuCtxDestroy(D)");
    if (get_access(b, CU_MEM_LOCATION_TYPE_DEVICE, 0, " after cuCtxDestroy(D)") == 3 && written)
      check(b, 2 * MiB, 14, 0, " after cuCtxDestroy(D)");
    props(hd, " after cuCtxDestroy(D)");
    map(b + 2 * MiB, 2 * MiB, 0, hd2, 0, " after cuCtxDestroy(D)");
    rw(b + 2 * MiB, 2 * MiB, " after cuCtxDestroy(D)");
    unmap(b + 2 * MiB, 2 * MiB, " after cuCtxDestroy(D)");
    unmap(b, 2 * MiB, " after cuCtxDestroy(D)");
    release(hd, " after cuCtxDestroy(D)");
    release(hd2, " after cuCtxDestroy(D)");
    addr_free(b, 4 * MiB, " after cuCtxDestroy(D)");
  }
  // C, the last context, destroyed with a mapping, a reservation and a handle live.
  const int rc = reserve("RC", 4 * MiB, 0);
  const CUmemGenericAllocationHandle hc = create(hn(), 2 * MiB, p);
  const CUmemGenericAllocationHandle hc2 = create(hn(), 2 * MiB, p);
  bool okc = false, writtenc = false;
  if (rc >= 0 && hc && hc2) {
    okc = map(base(rc), 2 * MiB, 0, hc) == CUDA_SUCCESS;
    writtenc =
        okc && rw(base(rc), 2 * MiB) == CUDA_SUCCESS && put(base(rc), 2 * MiB, 15) == CUDA_SUCCESS;
  }
  // Everything else of C's goes first.
  for (region& r : m_regions)
    if (!r.vmm && r.live) {
      line("cuMemFree(" + r.name + ") -> " + res(cuMemFree(r.base)));
      r.live = false;
    }
  line("cuCtxDestroy(C) -> " + res(cuCtxDestroy(m_c)));
  current();
  if (okc) {
    const CUdeviceptr b = base(rc);
    const std::string why = " after cuCtxDestroy(C), no context";
    line("cuCtxSetCurrent(NULL) -> " + res(cuCtxSetCurrent(nullptr)));
    attr(a_mapped, b, why);
    attr(a_context, b, why);
    attr(a_range_size, b, why);
    get_access(b, CU_MEM_LOCATION_TYPE_DEVICE, 0, why);
    props(hc, why);
    map(b + 2 * MiB, 2 * MiB, 0, hc2, 0, why);
    rw(b + 2 * MiB, 2 * MiB, why);
    primary_state();
    CUcontext e = new_context("E");
    (void)e;
    attrs(b, false, " in E");
    if (get_access(b, CU_MEM_LOCATION_TYPE_DEVICE, 0, " in E") == 3 && writtenc)
      check(b, 2 * MiB, 15, 0, " in E");
    attr(a_mapped, b + 2 * MiB, " in E");
    unmap(b + 2 * MiB, 2 * MiB, " in E");
    unmap(b, 2 * MiB, " in E");
    release(hc, " in E");
    release(hc2, " in E");
    addr_free(b, 4 * MiB, " in E");
  } else {
    new_context("E");
  }
}

// Last: calls whose outcome the reference leaves undefined or that may fault the context.
void vmm_sequence::undefined() {
  line("== copies into memory without access (may fault), releasing twice");
  const CUmemAllocationProp p = dev_prop();
  CUcontext f = new_context("F");
  const int s = reserve("S", 8 * MiB, 0);
  const CUmemGenericAllocationHandle h = create(hn(), 2 * MiB, p);
  const CUmemGenericAllocationHandle hr = create(hn(), 2 * MiB, p);
  if (s >= 0 && h && hr) {
    const CUdeviceptr sb = base(s);
    map(sb, 2 * MiB, 0, h);
    // Mapped, no access set.
    put(sb, 4 * KiB, 16, " mapped, no cuMemSetAccess");
    sync();
    check(sb, 4 * KiB, 16, 0, " mapped, no cuMemSetAccess");
    sync();
    rw(sb, 2 * MiB);
    put(sb, 2 * MiB, 17, " after cuMemSetAccess");
    check(sb, 2 * MiB, 17, 0, " after cuMemSetAccess");
    // An unmapped hole of a partly mapped reservation.
    map(sb + 4 * MiB, 2 * MiB, 0, hr);
    rw(sb + 4 * MiB, 2 * MiB);
    put(sb + 2 * MiB, 4 * KiB, 18, " unmapped hole");
    sync(" after the copy into the hole");
    check(sb + 2 * MiB, 4 * KiB, 18, 0, " unmapped hole");
    sync();
    put(sb + MiB, 2 * MiB, 19, " from a mapping into the hole");
    sync();
    put(sb, 6 * MiB, 20, " across the hole");
    sync();
    check(sb, 4 * KiB, 17, 0, " the first mapping, still usable?");
    // Read only.
    set_access(sb + 4 * MiB, 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 0,
               CU_MEM_ACCESS_FLAGS_PROT_READ);
    check(sb + 4 * MiB, 4 * KiB, 0, 0, " PROT_READ");
    put(sb + 4 * MiB, 4 * KiB, 21, " PROT_READ");
    sync(" after the write to PROT_READ");
    check(sb + 4 * MiB, 4 * KiB, 21, 0, " PROT_READ");
    sync();
    unmap(sb, 2 * MiB);
    unmap(sb + 4 * MiB, 2 * MiB);
    addr_free(sb, 8 * MiB);
  }
  line("cuCtxDestroy(F) -> " + res(cuCtxDestroy(f)));
  for (const auto& [n, c] : m_ctx)
    if (n == "E") line("cuCtxSetCurrent(E) -> " + res(cuCtxSetCurrent(c)));
  if (h) release(h);
  if (h) release(h, " twice");
  if (hr) release(hr);
  const CUmemGenericAllocationHandle h3 = create(hn(), 2 * MiB, p, 0, " after releasing twice");
  if (h3) release(h3);
}

void vmm_sequence::run() {
  before_init();
  no_context();
  device_attributes();
  granularities();
  reservations();
  creates();
  maps();
  pointer_attributes();
  unmaps();
  sharing();
  destroyed_context();
  undefined();
  line("== end");
}

}  // namespace cuda_probe::vmm

namespace cuda_probe {

void run_vmm(const sink& out) {
  vmm::vmm_sequence s(out);
  s.run();
}

}  // namespace cuda_probe
