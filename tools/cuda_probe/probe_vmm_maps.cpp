// The VMM sequence's handles, mappings, pointer attributes and unmapping (probe_vmm.h).
#include "probe_vmm.h"

namespace cuda_probe::vmm {

void vmm_sequence::creates() {
  line("== cuMemCreate and cuMemRelease");
  const CUmemAllocationProp p = dev_prop();
  std::vector<CUmemGenericAllocationHandle> made;
  for (size_t size : {2 * MiB, 4 * MiB, MiB, size_t(0), 2 * MiB + 4 * KiB, 64 * KiB, 1 * GiB}) {
    const CUmemGenericAllocationHandle h = create(hn(), size, p);
    if (h) {
      props(h);
      made.push_back(h);
    }
  }
  for (unsigned long long f : {1ull, 2ull}) {
    const CUmemGenericAllocationHandle h = create(hn(), 2 * MiB, p, f);
    if (h) made.push_back(h);
  }
  for (unsigned char gdr : {1, 0, 2}) {
    const CUmemGenericAllocationHandle h = create(hn(), 2 * MiB, dev_prop(0, 0, gdr));
    if (h) {
      props(h);
      made.push_back(h);
    }
  }
  for (int id : {1, -1}) {
    const CUmemGenericAllocationHandle h = create(hn(), 2 * MiB, dev_prop(id), 0, " bad device");
    if (h) made.push_back(h);
  }
  for (unsigned types : {1u, 2u, 8u, 0x10u}) {
    const CUmemGenericAllocationHandle h = create(hn(), 2 * MiB, dev_prop(0, types));
    if (h) {
      props(h);
      made.push_back(h);
    }
  }
  {
    CUmemAllocationProp q = dev_prop();
    q.type = (CUmemAllocationType)0;
    CUmemGenericAllocationHandle h = create(hn(), 2 * MiB, q, 0, " type INVALID");
    if (h) made.push_back(h);
    q = dev_prop();
    q.type = CU_MEM_ALLOCATION_TYPE_MANAGED;
    h = create(hn(), 2 * MiB, q, 0, " type MANAGED");
    if (h) made.push_back(h);
    q = dev_prop();
    q.location.type = (CUmemLocationType)0;
    h = create(hn(), 2 * MiB, q, 0, " location type INVALID");
    if (h) made.push_back(h);
    q = dev_prop();
    q.location.type = CU_MEM_LOCATION_TYPE_HOST;
    h = create(hn(), 2 * MiB, q, 0, " location HOST");
    if (h) {
      props(h);
      made.push_back(h);
    }
    q = dev_prop();
    q.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
    h = create(hn(), 2 * MiB, q, 0, " location HOST_NUMA 0");
    if (h) {
      props(h);
      made.push_back(h);
    }
    q = dev_prop();
    q.allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_GENERIC;
    h = create(hn(), 2 * MiB, q, 0, " compressible");
    if (h) {
      props(h);
      made.push_back(h);
    }
  }
  for (CUmemGenericAllocationHandle h : made) release(h);
  release(0, " handle 0");
  props(0, " handle 0");
}

void vmm_sequence::maps() {
  line("== cuMemMap and cuMemSetAccess");
  const CUmemAllocationProp p = dev_prop();
  const int m = reserve("M", 16 * MiB, 0);
  if (m < 0) return;
  const CUdeviceptr mb = base(m);
  const CUmemGenericAllocationHandle h2 = create(hn(), 2 * MiB, p);
  const CUmemGenericAllocationHandle h4 = create(hn(), 4 * MiB, p);
  const CUmemGenericAllocationHandle hx = create(hn(), 2 * MiB, p);
  map(mb, 2 * MiB, 0, h2);
  attrs(mb, false, " mapped, no access yet");
  get_access(mb, CU_MEM_LOCATION_TYPE_DEVICE, 0, " no access yet");
  // Misuse, each with a handle not mapped yet (hx) where the handle does not matter.
  map(mb + 5 * MiB, 2 * MiB, 0, hx, 0, " VA not 2MiB aligned");
  map(mb + 4 * MiB + 64 * KiB, 2 * MiB, 0, hx, 0, " VA 64KiB aligned");
  // Driver 580 accepts this one (only the start must lie in a reservation) and the mapping is
  // left in place: the next reservation (Ja) is placed under its tail, and neither M nor Ja can
  // be freed later. The transcript records those consequences; keep the order.
  map(mb + 14 * MiB, 4 * MiB, 0, h4, 0, " past the reservation end");
  map(mb + 16 * MiB, 2 * MiB, 0, hx, 0, " at the reservation end");
  map(mb, 2 * MiB, 0, hx, 0, " range already mapped");
  map(mb + MiB, 2 * MiB, 0, hx, 0, " overlapping a mapping");
  map(mb + 4 * MiB, 4 * MiB, 0, hx, 0, " larger than the handle");
  map(mb + 4 * MiB, MiB, 0, hx, 0, " size not a multiple");
  map(mb + 4 * MiB, 0, 0, hx, 0, " size 0");
  map(mb + 4 * MiB, 2 * MiB, MiB, h4, 0, " handle offset 1MiB");
  if (map(mb + 4 * MiB, 2 * MiB, 2 * MiB, h4, 0, " handle offset 2MiB") == CUDA_SUCCESS) {
    attrs(mb + 4 * MiB, false, " mapped at handle offset 2MiB");
    unmap(mb + 4 * MiB, 2 * MiB);
  }
  map(mb + 4 * MiB, 4 * MiB, 2 * MiB, h4, 0, " handle offset + size past the handle");
  for (unsigned long long f : {1ull, 2ull}) map(mb + 4 * MiB, 2 * MiB, 0, hx, f, " flags");
  map(mb + 4 * MiB, 2 * MiB, 0, 0, 0, " handle 0");
  map(0, 2 * MiB, 0, hx, 0, " VA null");
  {
    const int a = alloc("A", 2 * MiB);
    if (a >= 0) map(base(a), 2 * MiB, 0, hx, 0, " onto cuMemAlloc memory");
  }
  // Two adjacent reservations, a mapping across their boundary.
  {
    const int ra = reserve("Ja", 2 * MiB, 0);
    const int rb =
        ra >= 0 ? reserve("Jb", 2 * MiB, 0, base(ra) + 2 * MiB, 0, " after Ja", "Ja+2MiB") : -1;
    if (rb >= 0 && base(rb) == base(ra) + 2 * MiB) {
      if (map(base(ra), 4 * MiB, 0, h4, 0, " across two adjacent reservations") == CUDA_SUCCESS) {
        attrs(base(ra), false, " mapped across two reservations");
        attr(a_range_start, base(rb), " mapped across two reservations");
        attr(a_range_size, base(rb), " mapped across two reservations");
        rw(base(ra), 4 * MiB, " across two reservations");
        put(base(ra), 4 * MiB, 2, " across two reservations");
        check(base(ra), 4 * MiB, 2, 0, " across two reservations");
        addr_free(base(ra), 2 * MiB, " while mapped");
        unmap(base(ra), 4 * MiB);
      }
    }
    if (ra >= 0) addr_free(base(ra), 2 * MiB);
    if (rb >= 0) addr_free(base(rb), 2 * MiB);
  }
  // The second handle right after the first: one contiguous mapped range of two handles.
  map(mb + 2 * MiB, 4 * MiB, 0, h4);
  // Access.
  rw(mb, 2 * MiB);
  get_access(mb);
  get_access(mb + 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 0, " second mapping, no access yet");
  get_access(mb + 8 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 0, " unmapped");
  get_access(mb, CU_MEM_LOCATION_TYPE_DEVICE, 1, " bad device");
  get_access(mb, CU_MEM_LOCATION_TYPE_HOST, 0, " host");
  rw(mb + 8 * MiB, 2 * MiB, " unmapped");
  rw(mb, 16 * MiB, " mapped and unmapped");
  rw(mb + 2 * MiB, 2 * MiB, " half of a mapping");
  rw(mb + MiB, 2 * MiB, " not 2MiB aligned, across two mappings");
  rw(mb, MiB, " part of a mapping, not 2MiB");
  rw(mb, 6 * MiB, " two mappings");
  get_access(mb + 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 0, " after access on both");
  rw(mb, 0, " size 0");
  set_access(mb, 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 1, 3, 1, " bad device 1");
  set_access(mb, 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, -1, 3, 1, " bad device -1");
  set_access(mb, 2 * MiB, CU_MEM_LOCATION_TYPE_HOST, 0, 3, 1, " host");
  set_access(mb, 2 * MiB, 0, 0, 3, 1, " location type INVALID");
  set_access(mb, 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 0, 2, 1, " flags 0x2");
  set_access(mb, 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 0, 7, 1, " flags 0x7");
  set_access(mb, 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 0, 3, 0, " no descriptors");
  set_access(mb, 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 0, 3, 2, " the same device twice");
  set_access(0, 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 0, 3, 1, " VA null");
  get_access(mb, CU_MEM_LOCATION_TYPE_DEVICE, 0, " after the misuse");
  // READ only, then NONE, then READWRITE again, on the first mapping.
  set_access(mb, 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 0, CU_MEM_ACCESS_FLAGS_PROT_READ);
  get_access(mb);
  attr(a_access_flags, mb, " PROT_READ");
  check(mb, 4 * KiB, 0, 0, " PROT_READ (bytes never written)");
  set_access(mb, 2 * MiB, CU_MEM_LOCATION_TYPE_DEVICE, 0, CU_MEM_ACCESS_FLAGS_PROT_NONE);
  get_access(mb);
  attr(a_access_flags, mb, " PROT_NONE");
  // Read-write on both mappings, one call each, before any copy (a copy into memory without
  // access may fault the context: those come last).
  const bool ok2 = rw(mb, 2 * MiB) == CUDA_SUCCESS;
  const bool ok4 = rw(mb + 2 * MiB, 4 * MiB) == CUDA_SUCCESS;
  const bool ok = ok2 && ok4 && get_access(mb) == 3 && get_access(mb + 2 * MiB) == 3;
  if (!ok) line("# M's mappings are not both read-write: the copies are left out");
  // Copies, bytes checked.
  if (ok) {
    put(mb, 2 * MiB, 3);
    check(mb, 2 * MiB, 3);
    put(mb + 2 * MiB, 4 * MiB, 4);
    check(mb + 2 * MiB, 4 * MiB, 4);
    put(mb + MiB, 2 * MiB, 5, " spanning two handles");
    check(mb + MiB, 2 * MiB, 5, 0, " spanning two handles");
    check(mb + MiB, MiB, 5, 0, " the first handle's part");
    check(mb + 2 * MiB, MiB, 5, MiB, " the second handle's part");
    line("cuMemsetD8(M+1MiB, 0x5a, 2MiB) spanning two handles -> " +
         res(cuMemsetD8(mb + MiB, 0x5a, 2 * MiB)));
    std::vector<unsigned char> b(2 * MiB);
    const CUresult r2 = cuMemcpyDtoH(b.data(), mb + MiB, 2 * MiB);
    bool same = true;
    for (unsigned char c : b) same = same && c == 0x5a;
    line("cuMemcpyDtoH(host, M+1MiB, 2MiB) after the memset -> " + res(r2) +
         (r2 == CUDA_SUCCESS ? (same ? " bytes ok" : " bytes differ") : ""));
    put(mb, 6 * MiB, 6, " both handles whole");
    check(mb, 6 * MiB, 6, 0, " both handles whole");
    for (const region& a : m_regions)
      if (a.name == "A" && a.live) {
        const CUresult r = cuMemcpyDtoD(a.base, mb + MiB, 2 * MiB);
        line("cuMemcpyDtoD(A, M+1MiB, 2MiB) spanning two handles -> " + res(r));
        check(a.base, 2 * MiB, 6, MiB, " A, from M+1MiB");
        line("cuMemcpyDtoD(M+1MiB, A, 2MiB) spanning two handles -> " +
             res(cuMemcpyDtoD(mb + MiB, a.base, 2 * MiB)));
        check(mb, 6 * MiB, 6, 0, " both handles whole, after the copy back");
      }
  }
  m_ok = ok;
  // Kept for the pointer attribute and unmap sections.
  m_m = m;
  m_h2 = h2;
  m_h4 = h4;
  m_hx = hx;
}

void vmm_sequence::pointer_attributes() {
  line("== pointer attributes of VMM memory");
  if (m_m < 0) return;
  const CUdeviceptr mb = base(m_m);
  attrs(mb, true, " mapped start");
  attrs(mb + MiB, true, " mapped interior");
  attrs(mb + 2 * MiB, true, " second mapping's start");
  attrs(mb + 5 * MiB, false, " second mapping's interior");
  attrs(mb + 8 * MiB, false, " unmapped, in the reservation");
  attrs(mb + 16 * MiB, false, " the reservation's end");
  // A handle released while mapped.
  const CUmemAllocationProp p = dev_prop();
  const int q = reserve("Q", 4 * MiB, 0);
  const CUmemGenericAllocationHandle hr = create(hn(), 2 * MiB, p);
  if (q >= 0 && hr) {
    const CUdeviceptr qb = base(q);
    const bool ok = map(qb, 2 * MiB, 0, hr) == CUDA_SUCCESS && rw(qb, 2 * MiB) == CUDA_SUCCESS;
    if (ok) put(qb, 2 * MiB, 7);
    attr(a_buffer_id, qb, " before the release");
    attr(a_block_id, qb, " before the release");
    release(hr, " while mapped");
    props(hr, " released while mapped");
    attrs(qb, false, " handle released while mapped");
    if (ok &&
        get_access(qb, CU_MEM_LOCATION_TYPE_DEVICE, 0, " handle released while mapped") == 3) {
      check(qb, 2 * MiB, 7, 0, " handle released while mapped");
      put(qb, 2 * MiB, 8, " handle released while mapped");
      check(qb, 2 * MiB, 8, 0, " handle released while mapped");
    }
    retain(qb + MiB, hn(), " handle released while mapped");
    if (map(qb + 2 * MiB, 2 * MiB, 0, hr, 0, " the released handle, again") == CUDA_SUCCESS)
      unmap(qb + 2 * MiB, 2 * MiB);
    unmap(qb, 2 * MiB);
    attrs(qb, false, " after cuMemUnmap");
    addr_free(qb, 4 * MiB);
  }
  // BUFFER_ID and MEMORY_BLOCK_ID across unmap and remap of the same handle at the same VA.
  const int b = reserve("B", 4 * MiB, 0);
  const CUmemGenericAllocationHandle hb = create(hn(), 2 * MiB, p);
  if (b >= 0 && hb) {
    const CUdeviceptr bb = base(b);
    map(bb, 2 * MiB, 0, hb);
    rw(bb, 2 * MiB);
    attr(a_buffer_id, bb, " first mapping");
    attr(a_block_id, bb, " first mapping");
    unmap(bb, 2 * MiB);
    map(bb, 2 * MiB, 0, hb, 0, " the same handle again");
    attr(a_buffer_id, bb, " remapped");
    attr(a_block_id, bb, " remapped");
    attr(a_access_flags, bb, " remapped, before cuMemSetAccess");
    get_access(bb, CU_MEM_LOCATION_TYPE_DEVICE, 0, " remapped, before cuMemSetAccess");
    unmap(bb, 2 * MiB);
    map(bb + 2 * MiB, 2 * MiB, 0, hb, 0, " the same handle at another VA");
    rw(bb + 2 * MiB, 2 * MiB);
    attr(a_buffer_id, bb + 2 * MiB, " remapped at B+2MiB");
    attr(a_block_id, bb + 2 * MiB, " remapped at B+2MiB");
    unmap(bb + 2 * MiB, 2 * MiB);
    release(hb);
    addr_free(bb, 4 * MiB);
  }
  // A cuMemAlloc allocation, for comparison.
  for (size_t k = 0; k < m_regions.size(); ++k)
    if (m_regions[k].name == "A" && m_regions[k].live) {
      attr(a_mapping_size, m_regions[k].base + MiB, " cuMemAlloc memory");
      attr(a_mapping_base, m_regions[k].base + MiB, " cuMemAlloc memory");
      attr(a_block_id, m_regions[k].base + MiB, " cuMemAlloc memory");
      attr(a_handle_types, m_regions[k].base + MiB, " cuMemAlloc memory");
      attr(a_access_flags, m_regions[k].base + MiB, " cuMemAlloc memory");
      retain(m_regions[k].base, hn(), " cuMemAlloc memory");
    }
}

void vmm_sequence::unmaps() {
  line("== cuMemUnmap, remapping");
  if (m_m < 0) return;
  const CUdeviceptr mb = base(m_m);
  unmap(mb, MiB, " half of a mapping");
  unmap(mb + MiB, MiB, " the second half of a mapping");
  unmap(mb + 2 * MiB, 2 * MiB, " the first half of the 4MiB mapping");
  unmap(mb + 8 * MiB, 2 * MiB, " unmapped");
  unmap(mb + 6 * MiB, 2 * MiB, " unmapped, right after a mapping");
  const bool whole = unmap(mb, 16 * MiB, " the whole reservation") == CUDA_SUCCESS;
  unmap(mb + 2 * MiB, 4 * MiB);
  unmap(mb + 2 * MiB, 4 * MiB, " twice");
  unmap(0, 2 * MiB, " VA null");
  attrs(mb + 2 * MiB, false, " after cuMemUnmap");
  if (!whole && m_ok && get_access(mb) == 3)
    check(mb, 2 * MiB, 6, 0, " the first mapping, still mapped");
  unmap(mb, 2 * MiB);
  // Two mappings unmapped in one call.
  map(mb, 2 * MiB, 0, m_h2);
  map(mb + 2 * MiB, 4 * MiB, 0, m_h4);
  unmap(mb, 6 * MiB, " two mappings at once");
  attr(a_mapped, mb + 2 * MiB, " after unmapping two at once");
  unmap(mb + 2 * MiB, 4 * MiB, " in case it was not");
  unmap(mb, 2 * MiB, " in case it was not");
  // The same handle at another offset: its bytes kept while unmapped.
  if (map(mb + 8 * MiB, 2 * MiB, 0, m_h2, 0, " at another offset") == CUDA_SUCCESS) {
    if (rw(mb + 8 * MiB, 2 * MiB) == CUDA_SUCCESS && m_ok)
      check(mb + 8 * MiB, 2 * MiB, 6, 0, " bytes kept across unmap and remap");
    unmap(mb + 8 * MiB, 2 * MiB);
  }
  // Two different handles at one VA, one after the other.
  if (map(mb, 2 * MiB, 0, m_h2) == CUDA_SUCCESS) {
    const bool w = rw(mb, 2 * MiB) == CUDA_SUCCESS &&
                   put(mb, 2 * MiB, 9, " into the first handle") == CUDA_SUCCESS;
    unmap(mb, 2 * MiB);
    if (map(mb, 2 * MiB, 0, m_hx, 0, " another handle at the same VA") == CUDA_SUCCESS) {
      if (rw(mb, 2 * MiB) == CUDA_SUCCESS) {
        if (w) check(mb, 2 * MiB, 9, 0, " the other handle at the same VA");
        put(mb, 2 * MiB, 10, " into the other handle");
      }
      unmap(mb, 2 * MiB);
    }
    if (map(mb, 2 * MiB, 0, m_h2, 0, " the first handle again") == CUDA_SUCCESS) {
      if (rw(mb, 2 * MiB) == CUDA_SUCCESS && w) check(mb, 2 * MiB, 9, 0, " the first handle again");
      unmap(mb, 2 * MiB);
    }
  }
  // One handle at two VAs in two reservations.
  const int y1 = reserve("Y1", 2 * MiB, 0);
  const int y2 = reserve("Y2", 2 * MiB, 0);
  if (y1 >= 0 && y2 >= 0) {
    const CUdeviceptr a = base(y1), b = base(y2);
    const bool ma = map(a, 2 * MiB, 0, m_hx) == CUDA_SUCCESS;
    const bool mb2 = map(b, 2 * MiB, 0, m_hx, 0, " the same handle a second time") == CUDA_SUCCESS;
    const bool ok = ma && mb2 && rw(a, 2 * MiB) == CUDA_SUCCESS && rw(b, 2 * MiB) == CUDA_SUCCESS;
    if (ok) {
      check(b, 2 * MiB, 10, 0, " Y2: what was written before");
      put(a, 2 * MiB, 11, " through Y1");
      check(b, 2 * MiB, 11, 0, " through Y2");
      put(b + MiB, 4 * KiB, 12, " through Y2");
      check(a + MiB, 4 * KiB, 12, 0, " through Y1");
    }
    if (ma && mb2) {
      attr(a_buffer_id, a, " Y1");
      attr(a_buffer_id, b, " Y2");
      attr(a_block_id, a, " Y1");
      attr(a_block_id, b, " Y2");
      attr(a_range_start, b + MiB, " Y2");
      attr(a_range_size, b + MiB, " Y2");
      attr(a_mapping_base, b + MiB, " Y2");
      retain(b + MiB, hn(), " Y2");
      unmap(a, 2 * MiB);
      if (ok) check(b, 4 * KiB, 11, 0, " Y2 after unmapping Y1");
    } else if (ma) {
      unmap(a, 2 * MiB);
    }
    addr_free(a, 2 * MiB);
    addr_free(b, 2 * MiB, " while mapped");
    if (mb2) unmap(b, 2 * MiB);
    addr_free(b, 2 * MiB);
  }
  release(m_h2);
  release(m_h4);
  release(m_hx);
  addr_free(mb, 16 * MiB);
}

}  // namespace cuda_probe::vmm
