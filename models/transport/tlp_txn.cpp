#include "models/transport/tlp_txn.h"

#include "models/pcie/split.h"

#include <algorithm>

namespace p2psim::transport {

void tlp_txn::carry(memory::chunk_run run) {
  shared = std::move(run);
  bytes.clear();
  set_data_ptr(const_cast<uint8_t*>(shared.chunks[0].data()));
}

std::span<const uint8_t> tlp_txn::payload() {
  if (shared) {
    bytes.resize(shared.count * memory::chunk_bytes);
    for_each_piece([&](uint64_t at, std::span<const uint8_t> piece) {
      std::copy(piece.begin(), piece.end(), bytes.begin() + long(at));
    });
    shared.reset();
    set_data_ptr(bytes.data());
  }
  return {bytes.data(), bytes.size()};
}

tlp_txn& tlp_pool::make(const pcie::tlp_header& h, uint32_t stream) {
  tlp_txn* t;
  if (m_free.empty()) {
    t = new tlp_txn;
    t->set_mm(this);
    t->pool = this;
    m_all.push_back(t);
  } else {
    t = m_free.back();
    m_free.pop_back();
  }
  t->ext.hdr = h;
  t->ext.meta = pcie::tlp_meta{};
  t->ext.meta.serial = ++m_serial;
  ++m_tlps;
  t->ext.meta.stream = stream;
  t->ext.ingress_port = -1;
  t->ext.parent = nullptr;
  uint32_t n = pcie::has_data(h.type) ? h.length : 0;
  t->shared.reset();
  t->bytes.resize(n);
  t->set_command(h.type == pcie::tlp_type::mrd ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
  t->set_address(h.address);
  t->set_data_ptr(t->bytes.data());
  t->set_data_length(n);
  t->set_streaming_width(n);
  t->set_byte_enable_ptr(nullptr);
  t->set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  t->acquire();
  return *t;
}

tlp_txn& tlp_pool::make_burst(const pcie::tlp_header& h, uint32_t stream, uint32_t tlps,
                              uint32_t unit) {
  tlp_txn& t = make(h, stream);
  t.ext.meta.burst = true;
  t.ext.meta.tlps = tlps;
  t.ext.meta.unit = unit;
  set_request_ends(t);
  m_tlps += tlps - 1;
  return t;
}

// A request burst's TLPs are cut at multiples of its unit; a completion burst's maker sets
// its own (pcie::completion_ends).
void tlp_pool::set_request_ends(tlp_txn& t) {
  auto& m = t.ext.meta;
  const auto& h = t.ext.hdr;
  const pcie::end_tlps e =
      pcie::has_data(h.type) ? pcie::request_ends(h.address, h.length, m.unit) : pcie::end_tlps{};
  m.first_bytes = e.first;
  m.last_bytes = e.last;
}

tlp_txn& tlp_pool::re_emit(tlp_txn& t, uint32_t tlps, uint32_t unit) {
  tlp_txn& n = make(t.ext.hdr, t.ext.meta.stream);
  const uint64_t serial = n.ext.meta.serial;
  n.ext.meta = t.ext.meta;  // it goes on as the original came in (its lag, its stream)
  n.ext.meta.serial = serial;
  n.ext.meta.burst = true;
  n.ext.meta.tlps = tlps;
  n.ext.meta.unit = unit;
  n.ext.meta.told_at_last_start = false;
  // The pieces of the original's last TLP come out together (at its lag).
  if (t.ext.meta.tlps > 1 && tlps > t.ext.meta.tlps) {
    const uint64_t end = t.ext.hdr.address + t.ext.hdr.length, old_unit = t.ext.meta.unit;
    const uint64_t last_start =
        std::max<uint64_t>(t.ext.hdr.address, (end - 1) / old_unit * old_unit);
    n.ext.meta.tail_tlps = uint32_t(pcie::count_requests(last_start, end - last_start, unit));
    n.ext.meta.tail_spread_ps = 0;
  }
  set_request_ends(n);
  m_tlps += tlps - 1;
  n.bytes.swap(t.bytes);
  t.set_data_ptr(t.bytes.data());
  if (t.shared)
    n.carry(std::move(t.shared));
  else
    n.set_data_ptr(n.bytes.data());
  return n;
}

tlp_txn& tlp_pool::split_burst(tlp_txn& t, uint32_t tlps, uint32_t bytes) {
  pcie::tlp_header h = t.ext.hdr;
  h.length = bytes;
  const bool data = pcie::has_data(h.type);
  tlp_txn& head = make(h, t.ext.meta.stream);
  --m_tlps;  // the TLPs were counted when `t` was made
  head.ext.meta.burst = true;
  head.ext.meta.tlps = tlps;
  head.ext.meta.unit = t.ext.meta.unit;
  if (data) {
    std::span<const uint8_t> all = t.payload();
    std::copy(all.begin(), all.begin() + bytes, head.bytes.begin());
    t.bytes.erase(t.bytes.begin(), t.bytes.begin() + bytes);
  }
  t.ext.hdr.address += bytes;
  t.ext.hdr.length -= bytes;
  t.ext.meta.tlps -= tlps;
  const uint32_t n = data ? t.ext.hdr.length : 0;
  t.set_address(t.ext.hdr.address);
  t.set_data_ptr(t.bytes.data());
  t.set_data_length(n);
  t.set_streaming_width(n);
  set_request_ends(head);
  set_request_ends(t);
  return head;
}

void tlp_pool::free(tlm::tlm_generic_payload* gp) {
  auto* t = static_cast<tlp_txn*>(gp);
  t->shared.reset();  // a chunk held here would cost its stores a copy on their next write
  m_free.push_back(t);
}

tlp_pool::~tlp_pool() {
  for (tlp_txn* t : m_all) delete t;
}

}  // namespace p2psim::transport
