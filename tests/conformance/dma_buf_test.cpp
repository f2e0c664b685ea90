// dma-buf, the importer's side (GPUDirect RDMA 13.3, 4.1: the upstream Linux path; Linux
// Documentation/driver-api/dma-buf.rst and include/linux/dma-buf.h): a third-party driver
// imports the descriptor cuMemGetHandleForAddressRange returned, attaches its device, maps the
// attachment and DMAs to the bus addresses it gets, which are the GPU's BAR1 (through the
// device's IOMMU when it translates). Bytes written there land in the exported memory.
#include <catch2/catch.hpp>

#include <vector>

#include "models/driver/kernel/dma_buf.h"
#include "models/driver/kernel/syscalls.h"
#include "models/driver/peer/kmd.h"
#include "models/iommu/iommu.h"
#include "tests/conformance/cuda_helpers.h"

using namespace p2psim;
using namespace p2psim::kernel;
using test::k64;

namespace {

int export_range(CUdeviceptr p, size_t size) {
  int fd = -1;
  REQUIRE(cuMemGetHandleForAddressRange(&fd, p, size, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0) ==
          CUDA_SUCCESS);
  return fd;
}

size_t free_vram() {
  size_t free = 0, total = 0;
  REQUIRE(cuMemGetInfo(&free, &total) == CUDA_SUCCESS);
  return free;
}

// What a peer's DMA engine does with a mapping: writes `bytes` from the mapping's start,
// segment by segment, through the bus (the IOMMU when it translates, then the GPU's BAR1).
void dma_write(test::world& w, const sg_table& sgt, const std::vector<uint8_t>& bytes,
               iommu::iommu_domain* io = nullptr) {
  size_t done = 0;
  for (const dma_segment& s : sgt.segments)
    for (uint64_t at = 0; at < s.length && done < bytes.size(); ++at, ++done) {
      uint64_t bus = s.address + at;
      if (io) {
        auto t = io->translate(bus, true);
        if (!t.ok) FAIL("the IOMMU blocks 0x" << std::hex << bus);
        bus = t.address;
      }
      auto vram = w.bar1(0).translate(bus - w.gpu(0).bar1_bus_base);
      if (!vram) FAIL("no BAR1 mapping at 0x" << std::hex << bus);
      w.vram(0).write(*vram, std::span<const uint8_t>(&bytes[done], 1));
    }
  REQUIRE(done == bytes.size());
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(i * 7 + seed + (i >> 12));
  return v;
}

uint64_t total_length(const sg_table& sgt) {
  uint64_t n = 0;
  for (const dma_segment& s : sgt.segments) n += s.length;
  return n;
}

void ignore_move(dma_buf_attachment*) {}

// What a static importer holds once it has mapped the buffer behind `fd`.
struct static_import {
  dma_buf* buf = nullptr;
  dma_buf_attachment* attachment = nullptr;
  sg_table* sgt = nullptr;
};

static_import import_static(int fd, pci_dev* dev) {
  static_import i;
  i.buf = dma_buf_get(fd);
  REQUIRE_FALSE(IS_ERR(i.buf));
  i.attachment = dma_buf_attach(i.buf, dev);
  REQUIRE_FALSE(IS_ERR_OR_NULL(i.attachment));
  i.sgt = dma_buf_map_attachment(i.attachment, DMA_BIDIRECTIONAL);
  REQUIRE_FALSE(IS_ERR_OR_NULL(i.sgt));
  return i;
}

void release(const static_import& i) {
  dma_buf_unmap_attachment(i.attachment, i.sgt, DMA_BIDIRECTIONAL);
  dma_buf_detach(i.buf, i.attachment);
  dma_buf_put(i.buf);
}

}  // namespace

TEST_CASE(
    "dma-buf (4.1): a static importer maps the export's BAR1 pages and its DMA lands in "
    "the memory",
    "[dma-buf]") {
  test::world w;
  test::cuda_context();
  const CUdeviceptr p = test::cuda_alloc(4 * k64);
  const int fd = export_range(p + 4096, 2 * k64);  // a sub-range, 4 KiB into the allocation
  dma_buf* buf = dma_buf_get(fd);
  REQUIRE_FALSE(IS_ERR(buf));
  CHECK(buf->size == 2 * k64);
  static pci_dev nic{"nic0", 0x0300, nullptr};
  dma_buf_attachment* a = dma_buf_attach(buf, &nic);
  REQUIRE_FALSE(IS_ERR_OR_NULL(a));
  const uint64_t bar1_before = w.driver().bar1_used_bytes(0);
  sg_table* sgt = dma_buf_map_attachment(a, DMA_BIDIRECTIONAL);
  REQUIRE_FALSE(IS_ERR_OR_NULL(sgt));
  CHECK(total_length(*sgt) == 2 * k64);
  // The range spans three 64 KiB pages: each one gets a BAR1 page.
  CHECK(w.driver().bar1_used_bytes(0) == bar1_before + 3 * k64);
  CHECK(sgt->segments.front().address % k64 == 4096);
  const auto bytes = pattern(2 * k64, 3);
  dma_write(w, *sgt, bytes);
  std::vector<uint8_t> out(2 * k64);
  REQUIRE(cuMemcpyDtoH(out.data(), p + 4096, out.size()) == CUDA_SUCCESS);
  CHECK(out == bytes);
  dma_buf_unmap_attachment(a, sgt, DMA_BIDIRECTIONAL);
  CHECK(w.driver().bar1_used_bytes(0) == bar1_before);  // the BAR1 pages went with the mapping
  dma_buf_detach(buf, a);
  dma_buf_put(buf);
  CHECK(sys::close(fd) == 0);
  CHECK(w.os().dma_bufs().live_buffers() == 0);
  CHECK(w.os().dma_bufs().misuse() == 0);
}

TEST_CASE("dma-buf (4.1 and 4.7): a mapping shares BAR1 pages with nv-p2p pins of the same memory",
          "[dma-buf]") {
  test::world w;
  test::cuda_context();
  const CUdeviceptr p = test::cuda_alloc(2 * k64);
  const CUDA_POINTER_ATTRIBUTE_P2P_TOKENS t = test::tokens(p);
  nvidia_p2p_page_table_t* table = nullptr;
  REQUIRE(nvidia_p2p_get_pages(
              t.p2pToken, t.vaSpaceToken, p, 2 * k64, &table, [](void*) {}, nullptr) == 0);
  const uint64_t bar1_pinned = w.driver().bar1_used_bytes(0);
  static pci_dev nic{"nic0", 0x0300, nullptr};
  const static_import i = import_static(export_range(p, 2 * k64), &nic);
  CHECK(w.driver().bar1_used_bytes(0) == bar1_pinned);  // no new BAR1 page
  REQUIRE(i.sgt->segments.size() == 1);                 // the pin's pages, in order
  CHECK(i.sgt->segments[0].address == table->pages[0]->physical_address);
  release(i);
  CHECK(w.driver().bar1_used_bytes(0) == bar1_pinned);  // the pin keeps them mapped
  CHECK(nvidia_p2p_put_pages(t.p2pToken, t.vaSpaceToken, p, table) == 0);
}

TEST_CASE("dma-buf: a dynamic importer needs move_notify and allow_peer2peer to map GPU memory",
          "[dma-buf]") {
  test::world w;
  test::cuda_context();
  const CUdeviceptr p = test::cuda_alloc(k64);
  const int fd = export_range(p, k64);
  dma_buf* buf = dma_buf_get(fd);
  static pci_dev nic{"nic0", 0x0300, nullptr};
  // include/linux/dma-buf.h: "move_notify ... mandatory" for a dynamic importer.
  dma_buf_attach_ops no_notify;
  no_notify.allow_peer2peer = true;
  dma_buf_attachment* bad = dma_buf_dynamic_attach(buf, &nic, &no_notify, nullptr);
  REQUIRE(IS_ERR(bad));
  CHECK(PTR_ERR(bad) == -EINVAL);
  // Without allow_peer2peer the NVIDIA exporter declines: the core says -ENOMEM.
  dma_buf_attach_ops no_p2p;
  no_p2p.move_notify = ignore_move;
  dma_buf_attachment* a = dma_buf_dynamic_attach(buf, &nic, &no_p2p, nullptr);
  REQUIRE_FALSE(IS_ERR_OR_NULL(a));
  sg_table* refused = dma_buf_map_attachment(a, DMA_BIDIRECTIONAL);
  REQUIRE(IS_ERR(refused));
  CHECK(PTR_ERR(refused) == -ENOMEM);
  dma_buf_detach(buf, a);
  dma_buf_attach_ops p2p = no_p2p;
  p2p.allow_peer2peer = true;
  a = dma_buf_dynamic_attach(buf, &nic, &p2p, nullptr);
  sg_table* sgt = dma_buf_map_attachment(a, DMA_BIDIRECTIONAL);
  REQUIRE_FALSE(IS_ERR_OR_NULL(sgt));
  CHECK(total_length(*sgt) == k64);
  dma_buf_unmap_attachment(a, sgt, DMA_BIDIRECTIONAL);
  dma_buf_detach(buf, a);
  dma_buf_put(buf);
  CHECK(w.os().dma_bufs().misuse() == 0);
}

TEST_CASE(
    "dma-buf (4.1 and 5.4): behind a translating IOMMU the importer gets I/O virtual "
    "addresses that go with the mapping",
    "[dma-buf]") {
  test::world w;
  test::cuda_context();
  const CUdeviceptr p = test::cuda_alloc(2 * k64);
  const int fd = export_range(p, 2 * k64);
  iommu::iommu_params ip;
  ip.mode = iommu::iommu_mode::translating;
  iommu::iommu_domain dom(ip);
  pci_dev nic{"nic0", 0x0300, &dom};
  dma_buf* buf = dma_buf_get(fd);
  dma_buf_attachment* a = dma_buf_attach(buf, &nic);
  sg_table* sgt = dma_buf_map_attachment(a, DMA_BIDIRECTIONAL);
  REQUIRE_FALSE(IS_ERR_OR_NULL(sgt));
  const uint64_t iova = sgt->segments.front().address;
  CHECK(dom.translate(iova, true).ok);
  const uint64_t bar1_base = w.gpu(0).bar1_bus_base;
  CHECK((iova < bar1_base || iova >= bar1_base + w.bar1(0).size()));  // not a BAR1 address
  const auto bytes = pattern(2 * k64, 9);
  dma_write(w, *sgt, bytes, &dom);
  std::vector<uint8_t> out(2 * k64);
  REQUIRE(cuMemcpyDtoH(out.data(), p, out.size()) == CUDA_SUCCESS);
  CHECK(out == bytes);
  dma_buf_unmap_attachment(a, sgt, DMA_BIDIRECTIONAL);
  CHECK_FALSE(dom.translate(iova, true).ok);  // a late DMA would be blocked
  dma_buf_detach(buf, a);
  dma_buf_put(buf);
}

TEST_CASE(
    "dma-buf (4.1): memory freed while an importer has it mapped stays where the "
    "importer's DMA lands until the last reference goes",
    "[dma-buf]") {
  test::world w;
  test::cuda_context();
  const size_t before = free_vram();
  const CUdeviceptr p = test::cuda_alloc(4 * k64);
  const int fd = export_range(p, 4 * k64);
  static pci_dev nic{"nic0", 0x0300, nullptr};
  const static_import i = import_static(fd, &nic);
  REQUIRE(cuMemFree(p) == CUDA_SUCCESS);  // no callback: the NVIDIA exporter never moves it
  CHECK(free_vram() == before - 4 * k64);
  // A new allocation gets other memory: the importer's writes do not reach it.
  const CUdeviceptr q = test::cuda_alloc(4 * k64);
  std::vector<uint8_t> zeros(4 * k64, 0);
  REQUIRE(cuMemcpyHtoD(q, zeros.data(), zeros.size()) == CUDA_SUCCESS);
  dma_write(w, *i.sgt, pattern(4 * k64, 5));
  std::vector<uint8_t> out(4 * k64, 1);
  REQUIRE(cuMemcpyDtoH(out.data(), q, out.size()) == CUDA_SUCCESS);
  CHECK(out == zeros);
  CHECK(free_vram() == before - 8 * k64);
  CHECK(sys::close(fd) == 0);
  CHECK(free_vram() == before - 8 * k64);  // the importer's reference still holds it
  release(i);
  CHECK(free_vram() == before - 4 * k64);
}

TEST_CASE("dma-buf: calls with stale or wrong pointers are refused and never crash", "[dma-buf]") {
  test::world w;
  test::cuda_context();
  const CUdeviceptr p = test::cuda_alloc(k64);
  CHECK(PTR_ERR(dma_buf_get(77)) == -EBADF);  // not an open descriptor
  const int fd = export_range(p, k64);
  dma_buf* buf = dma_buf_get(fd);
  static pci_dev nic{"nic0", 0x0300, nullptr};
  dma_buf_attachment* a = dma_buf_attach(buf, &nic);
  sg_table* sgt = dma_buf_map_attachment(a, DMA_BIDIRECTIONAL);
  dma_buf_unmap_attachment(a, sgt, DMA_BIDIRECTIONAL);
  dma_buf_unmap_attachment(a, sgt, DMA_BIDIRECTIONAL);  // twice
  CHECK(w.os().dma_bufs().misuse() == 1);
  // Mapped and never unmapped, then detached: the core unmaps it (and counts the misuse).
  sgt = dma_buf_map_attachment(a, DMA_BIDIRECTIONAL);
  REQUIRE_FALSE(IS_ERR_OR_NULL(sgt));
  const uint64_t bar1_mapped = w.driver().bar1_used_bytes(0);
  dma_buf_detach(buf, a);
  CHECK(w.driver().bar1_used_bytes(0) == bar1_mapped - k64);
  CHECK(w.os().dma_bufs().misuse() == 2);
  CHECK(PTR_ERR(dma_buf_map_attachment(a, DMA_BIDIRECTIONAL)) == -EINVAL);  // detached
  dma_buf_put(buf);
  CHECK(sys::close(fd) == 0);
  dma_buf_put(buf);  // released already
  CHECK(w.os().dma_bufs().misuse() == 4);
  CHECK(PTR_ERR(dma_buf_attach(buf, &nic)) == -EINVAL);
}

// The third-party driver's import (models/driver/peer/kmd): what an RDMA driver does with the
// descriptor a program registers.
TEST_CASE(
    "dma-buf (4.1): the peer driver imports a descriptor and builds DMA descriptors from "
    "the mapping and the program may close it at once",
    "[dma-buf][peer]") {
  test::world w;
  test::cuda_context();
  const CUdeviceptr p = test::cuda_alloc(4 * k64);
  pci_dev nic{"nic0", 0x0400, nullptr};
  peer::kmd k(&nic, false);
  peer::kmd_region* r = nullptr;
  CHECK(k.import_dma_buf(99, p, &r) == -EBADF);
  const int fd = export_range(p, 4 * k64);
  REQUIRE(k.import_dma_buf(fd, p, &r) == 0);
  CHECK(sys::close(fd) == 0);  // the import holds its own reference
  CHECK(w.os().dma_bufs().live_buffers() == 1);
  std::vector<peer::bus_segment> segs;
  REQUIRE(k.dma_segments(*r, p + 1000, 3 * k64, 0, segs) == 0);
  uint64_t total = 0;
  for (const auto& s : segs) total += s.length;
  CHECK(total == 3 * k64);
  auto vram = w.bar1(0).translate(segs.front().bus_address - w.gpu(0).bar1_bus_base);
  REQUIRE(vram);
  CHECK(*vram == w.driver().vram_of(w.pid(), p + 1000)->second);  // the byte it names
  CHECK(k.dma_segments(*r, p + 4 * k64, 1, 0, segs) == -EINVAL);  // past the buffer
  CHECK(k.unpin(r) == 0);
  CHECK(w.os().dma_bufs().live_buffers() == 0);  // unmapped, detached, put: released
  CHECK(w.os().dma_bufs().misuse() == 0);
}

// An exporter that moves memory calls dma_buf_move_notify; the NVIDIA one never does, so a
// plain exporter stands in for it here.
namespace {
struct movable_exporter : dma_buf_exporter {
  const char* name() const override { return "movable"; }
  int map(const dma_buf_attachment&, sg_table& out) override {
    out.segments.push_back({0x1000'0000, 4096});
    return 0;
  }
  void unmap(const dma_buf_attachment&, const sg_table&) override {}
};
}  // namespace

TEST_CASE("dma-buf: move_notify revokes an imported region once its DMA has drained",
          "[dma-buf][peer]") {
  test::world w;
  const int fd = w.os().dma_bufs().export_fd(w.pid(), 4096, std::make_unique<movable_exporter>());
  pci_dev nic{"nic0", 0x0400, nullptr};
  peer::kmd k(&nic, false);
  int waited = 0;
  k.set_wait_for_idle([&](peer::kmd_region& r) {
    waited += r.in_flight;
    r.in_flight = 0;  // the simulation waits here for the DMA to finish
  });
  peer::kmd_region* r = nullptr;
  REQUIRE(k.import_dma_buf(fd, 0x5000, &r) == 0);
  k.dma_begin(*r);
  dma_buf_move_notify(w.os().dma_bufs().file(w.pid(), fd));
  CHECK(waited == 1);
  CHECK(r->invalidated);
  std::vector<peer::bus_segment> segs;
  CHECK(k.dma_segments(*r, 0x5000, 4096, 0, segs) == -EINVAL);
  CHECK(k.unpin(r) == -EINVAL);  // revoked: forget() drops it
  CHECK(k.forget(r) == 0);
  CHECK(sys::close(fd) == 0);
  CHECK(w.os().dma_bufs().live_buffers() == 0);
  CHECK(w.os().dma_bufs().misuse() == 0);
}
