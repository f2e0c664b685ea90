// The harness's dma-buf import: the peer's kernel driver imports an export's descriptor as its
// process (dma_buf_get, a dynamic attachment, the map), DMAs through the region reach the
// exported frames, and its unpin releases it (docs/driver-model.md, "dma-buf export"). The
// reference predicts the result, takes the map's BAR1 pages as a persistent pin's (shared
// with pins, 4.7, never revoked) and keeps the exported memory while an import holds it.
#include <fmt/format.h>

#include "tests/driver_ref/harness.h"

namespace p2psim::driver_ref {

void harness::dma_buf_import(const command& c) {
  const int picked = pick(c.a, m_ref.exports());
  if (picked < 0) return;
  const int pid = m_ref.exported(picked).pid;
  const int fd = m_descriptors.at(picked);
  // The number means the descriptor of that number in the process now: a closed one's number
  // may name a later export.
  int e = -1;
  for (size_t j = 0; j < m_ref.exports(); ++j)
    if (m_ref.exported(int(j)).pid == pid && m_ref.exported(int(j)).open && m_descriptors[j] == fd)
      e = int(j);
  const int k = c.variant % 2;  // nic0, or nic1 behind its translating IOMMU
  const int want = e < 0 ? -EBADF : m_ref.predict_import(e);
  peer::kmd_region* region = nullptr;
  int got;
  {
    kernel::as_process as(pid);  // its descriptor: its process's kernel driver call
    got = m_kmds[k]->import_dma_buf(fd, 0, &region);
  }
  expect_eq(got, want, fmt::format("dma-buf import of descriptor {} of process {}", fd, pid));
  ++m_counts[got ? "dma-buf imports refused" : "dma-buf imports"];
  if (got) return;
  // The bus address of each page of the range, as BAR1 has it (through the IOMMU for nic1).
  const ref_export& x = m_ref.exported(e);
  std::vector<uint64_t> bus, iovas;
  for (const auto& run : region->device_runs) {
    for (uint64_t k2 = 0; k2 < run.bytes;) {
      uint64_t address = run.bus + k2;
      const uint64_t n = std::min(run.bytes - k2, page_bytes - address % page_bytes);
      if (k2 == 0 || address % page_bytes == 0) {
        uint64_t page = address / page_bytes * page_bytes;
        if (k) {
          iovas.push_back(page);
          auto tr = m_iommu.translate(page, false);
          expect(tr.ok, "an imported region's IOVA maps nothing");
          page = tr.address;
        }
        bus.push_back(page);
      }
      k2 += n;
    }
  }
  expect_eq(bus.size(), x.range_frames.size(), "the imported region's pages");
  const int pin = m_ref.add_import(e, x.pid);
  sut_pin p;
  p.bus = bus;
  m_pins.push_back(p);
  expect_eq(int(m_pins.size() - 1), pin, "pin index");
  const std::string bad = m_ref.learn_bar1_pages(pin, bus, m_world.gpu(x.gpu).bar1_bus_base);
  if (!bad.empty()) fail("dma-buf import: " + bad);
  if (k) m_import_iovas.push_back({pin, iovas});
  sut_region r;
  r.region = region;
  r.kmd = k;
  r.pin = pin;
  r.pid = x.pid;
  r.dma_buf_export = e;
  m_regions.push_back(r);
}

}  // namespace p2psim::driver_ref
