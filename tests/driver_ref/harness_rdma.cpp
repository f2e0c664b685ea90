// The harness's RDMA registration commands (docs/driver-model.md, "nvidia-peermem"): an RDMA
// device registers GPU memory through nvidia-peermem's clients, remote peers access it through
// the region, and the NVIDIA driver's revocations invalidate it. The reference predicts every
// result from what nvidia-peermem does with nv-p2p (a probe pin released at once, then the
// pin and the device's DMA mapping) and every byte a remote access moves.
#include <fmt/format.h>

#include "tests/driver_ref/harness.h"

namespace p2psim::driver_ref {

namespace {
uint8_t pattern_byte(size_t step, uint64_t k) {
  return uint8_t(step * 151 + k * 13 + (k >> 8));
}
}  // namespace

void harness::rdma_reg(const command& c) {
  process_slot& s = slot(c);
  const int alloc = pick_allocation(c);
  if (alloc < 0) return;
  const ref_allocation& a = m_ref.allocation(alloc);
  const uint64_t address = a.va + c.b % a.size, size = c.c % (a.size + page_bytes);
  if (vmm_in(s.pid, address, std::max<uint64_t>(size, 1)) ||
      imported_in(s.pid, address, std::max<uint64_t>(size, 1)))
    return;  // another process's VA
  const bool invalidation = c.variant % 4 != 3;
  const int peer = (c.variant / 4) % 2;
  // What the core and nvidia-peermem will do: the range rounded out to 64 KiB, pinned once
  // with zero tokens (the caller's own memory) and released to see whether it is GPU memory;
  // then pinned with the client's callback (nv_mem) or none (nv_mem_nc, when the registration
  // cannot be invalidated: refused since R535, 4.2), then mapped for the device.
  reference::pin_request q;
  q.caller = s.pid;
  q.va = address / page_bytes * page_bytes;
  q.length = (address + size + page_bytes - 1) / page_bytes * page_bytes - q.va;
  const bool probe = size && m_ref.predict_get_pages(q) == 0;
  int want = -EFAULT;
  if (!size)
    want = -EINVAL;
  else if (probe && invalidation)
    want = 0;
  else if (probe) {
    reference::pin_request n = q;
    n.callback = false;
    want = m_ref.predict_get_pages(n);
  }
  peer::rdma_mr* mr = nullptr;
  int got;
  {
    kernel::as_process as(s.pid);
    got = m_rdma->reg_mr(peer ? &m_nic1 : &m_nic0, address, size, &mr, invalidation);
  }
  expect_eq(got, want,
            fmt::format("ibv_reg_mr of 0x{:x}+0x{:x}{}", address, size,
                        invalidation ? "" : " without invalidation support"));
  if (probe) {  // its table was freed inside the call: nobody saw it
    const int p = m_ref.get_pages(q, callback_action::free_table, true);
    m_pins.push_back({});
    expect(m_ref.put_pages(s.pid, 0, 0, p), "nvidia-peermem's probe pin is released");
  }
  if (got) {
    ++m_counts[!size   ? "rdma registrations of 0 bytes"
               : probe ? "rdma registrations refused by nv-p2p"
                       : "rdma registrations of no GPU memory of the caller"];
    return;
  }
  ++m_counts["rdma registrations"];
  expect(mr->client == m_nv_mem.get(), "a registration that can be invalidated gets nv_mem");
  sut_mr m;
  m.mr = mr;
  m.rkey = mr->rkey;
  m.peer = peer;
  m.pid = s.pid;
  m.address = address;
  m.size = size;
  m.first_page = q.va;
  expect_eq(mr->first_page, q.va, "the region's first page");
  expect_eq(mr->pages.size(), q.length / page_bytes, "the region's pages");
  m.pin = m_ref.get_pages(q, callback_action::free_table, true);
  const auto* table = peer::nvidia_peermem::page_table_of(mr->context);
  expect(table != nullptr, "a registration holds its page table");
  expect_eq(record_pin(const_cast<nvidia_p2p_page_table_t*>(table)), m.pin, "pin index");
  m.mapping = m_ref.dma_map(m.pin, peer);
  expect(m.mapping >= 0, "the region's pin can be mapped");
  m_ref.learn_mapping(m.mapping, mr->pages);
  const auto* mapping = peer::nvidia_peermem::dma_mapping_of(mr->context);
  m_mappings.push_back(
      {const_cast<nvidia_p2p_dma_mapping_t*>(mapping), peer ? &m_nic1 : &m_nic0, m.pin});
  expect_eq(int(m_mappings.size() - 1), m.mapping, "mapping index");
  m_mrs.push_back(m);
}

void harness::rdma_dereg(const command& c) {
  const int i = pick(c.a, m_mrs.size());
  if (i < 0) return;
  sut_mr& m = m_mrs[i];
  if (!m.alive) {
    expect_eq(m_rdma->dereg_mr(nullptr), -EINVAL, "ibv_dereg_mr of no region");
    return;
  }
  const bool revoked = m_ref.pin(m.pin).st == pin_state::ended;
  int got;
  {
    kernel::as_process as(m.pid);
    got = m_rdma->dereg_mr(m.mr);
  }
  expect_eq(got, 0, "ibv_dereg_mr");
  m.alive = false;
  ++m_counts[revoked ? "rdma deregistrations of invalidated regions" : "rdma deregistrations"];
  if (revoked) return;                // the free callback unmapped and unpinned already
  m_ref.dma_unmap(m.mapping, m.pin);  // (a stray dma_unmap may have done it before)
  expect(m_ref.put_pages(m.pid, 0, 0, m.pin), "ibv_dereg_mr releases the region's pin");
}

// A remote peer's access: the device translates it through the region (a remote access error
// once the region is invalidated or deregistered, or outside it), then every byte goes to
// the bus address the region's mapping gives, and on through the IOMMU and BAR1.
void harness::rdma_access(const command& c) {
  const int i = pick(c.a, m_mrs.size());
  if (i < 0) return;
  const sut_mr& m = m_mrs[i];
  const bool write = c.variant % 2 == 0;
  const uint64_t reach = m.size + (c.variant % 8 == 7 ? page_bytes : 0);
  const uint64_t offset = c.b % reach, length = 1 + c.c % 512;
  const uint64_t address = m.address + offset;
  const bool revoked = !m.alive || m_ref.pin(m.pin).st == pin_state::ended;
  const bool inside = length <= m.size && offset <= m.size - length;
  std::vector<kernel::bus_run> runs;
  const int got = m_rdma->translate(m.rkey, address, length, runs);
  expect_eq(got, revoked || !inside ? -EACCES : 0,
            fmt::format("a remote {} of 0x{:x}+{} through a region of 0x{:x}+0x{:x}{}",
                        write ? "write" : "read", address, length, m.address, m.size,
                        !m.alive  ? " (deregistered)"
                        : revoked ? " (invalidated)"
                                  : ""));
  if (got) {
    ++m_counts["remote accesses refused"];
    return;
  }
  const ref_mapping& rm = m_ref.mapping(m.mapping);
  pci_dev* dev = m.peer ? &m_nic1 : &m_nic0;
  std::set<std::pair<int, uint64_t>> touched;
  uint64_t k = 0;
  for (const auto& run : runs)
    for (uint64_t j = 0; j < run.bytes; ++j, ++k) {
      const uint64_t bus = run.bus + j;
      const uint64_t at = address + k - m.first_page;
      expect_eq(bus, rm.addresses.at(at / page_bytes) + at % page_bytes,
                "the bus address of a remote access's byte");
      auto sut = sut_resolve(bus, dev);
      auto ref = ref_resolve(bus, m.peer);
      expect(sut.has_value() == ref.has_value(),
             fmt::format("a remote access's byte at 0x{:x}: {} in the models, {} in the "
                         "reference",
                         bus, sut ? "reaches VRAM" : "refused", ref ? "reaches VRAM" : "refused"));
      if (!ref) continue;
      expect(*sut == *ref, "a remote access's byte lands in another frame");
      ++m_counts["remote bytes reaching VRAM"];
      if (write) {
        const uint8_t v = pattern_byte(m_step, k);
        m_world.vram(sut->first).write(sut->second, {&v, 1});
        m_ref.vram(ref->first)[ref->second] = v;
        touched.insert({ref->first, ref->second / page_bytes});
      } else {
        uint8_t b = 0;
        m_world.vram(sut->first).read(sut->second, {&b, 1});
        expect_eq(b, m_ref.vram(ref->first)[ref->second], "a byte a remote peer read");
      }
    }
  expect_eq(k, length, "the bytes of a remote access");
  compare_frames(touched);
}

void harness::sync_mrs() {
  for (const sut_mr& m : m_mrs)
    if (m.alive)
      expect(m.mr->invalidated == (m_ref.pin(m.pin).st == pin_state::ended),
             fmt::format("the region of 0x{:x}+0x{:x} is {}invalidated, its pin {}", m.address,
                         m.size, m.mr->invalidated ? "" : "not ",
                         m_ref.pin(m.pin).st == pin_state::ended ? "revoked" : "live"));
}

}  // namespace p2psim::driver_ref
