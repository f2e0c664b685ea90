// A TLP as a TLM-2.0 transaction: a tlm_generic_payload whose tlp_ext carries the PCIe header
// and whose data array carries the payload bytes. Transactions come from a pool (no
// allocation per TLP once warm) and go back to it when their last owner releases them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>
#include <tlm>
#include <vector>

#include "models/memory/shared_chunk.h"
#include "models/pcie/tlp.h"

namespace p2psim::transport {

struct tlp_ext : tlm::tlm_extension<tlp_ext> {
  pcie::tlp_header hdr;
  pcie::tlp_meta meta;
  int ingress_port = -1;  // set by a forwarding component: where the TLP came in
  // Set on the last piece when a component cuts one TLP into several: the original, whose
  // ingress buffer is freed once that piece has left.
  tlm::tlm_generic_payload* parent = nullptr;
  tlm::tlm_extension_base* clone() const override { return new tlp_ext(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    *this = static_cast<const tlp_ext&>(other);
  }
};

// An allocator that leaves new bytes uninitialised: a payload buffer is always written in
// full before it is read, so zeroing it first would only cost time on every TLP.
template <typename T>
struct uninitialized_allocator {
  using value_type = T;
  uninitialized_allocator() = default;
  template <typename U>
  uninitialized_allocator(const uninitialized_allocator<U>&) {}
  T* allocate(size_t n) { return std::allocator<T>().allocate(n); }
  void deallocate(T* p, size_t n) { std::allocator<T>().deallocate(p, n); }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    if constexpr (sizeof...(Args) > 0)
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    else
      ::new (static_cast<void*>(p)) U;  // default-initialised: no zeroing
  }
  bool operator==(const uninitialized_allocator&) const { return true; }
};

class tlp_pool;

class tlp_txn : public tlm::tlm_generic_payload {
 public:
  tlp_txn() { set_extension(&ext); }
  ~tlp_txn() override { clear_extension(&ext); }
  tlp_ext ext;
  // The payload, unless `shared` carries it.
  std::vector<uint8_t, uninitialized_allocator<uint8_t>> bytes;
  // Burst fidelity: a burst of whole memory chunks carries the chunks themselves (shared,
  // copy on write) instead of a copy of their bytes.
  memory::chunk_run shared;
  // The pool it came from and goes back to (its memory manager, which this SystemC's
  // tlm_generic_payload does not hand out).
  tlp_pool* pool = nullptr;
  void carry(memory::chunk_run run);
  // Calls f(offset in the payload, bytes) for each contiguous piece of the payload.
  template <typename F>
  void for_each_piece(F&& f) const {
    if (!shared) {
      f(uint64_t(0), std::span<const uint8_t>(bytes.data(), bytes.size()));
      return;
    }
    for (uint32_t i = 0; i < shared.count; ++i)
      f(i * memory::chunk_bytes,
        std::span<const uint8_t>(shared.chunks[i].data(), memory::chunk_bytes));
  }
  // The payload in one piece (copies chunks a burst carries into `bytes` first).
  std::span<const uint8_t> payload();
};

inline tlp_txn& txn(tlm::tlm_generic_payload& gp) {
  return static_cast<tlp_txn&>(gp);
}
inline pcie::tlp_header& hdr(tlm::tlm_generic_payload& gp) {
  return txn(gp).ext.hdr;
}
inline pcie::tlp_meta& meta(tlm::tlm_generic_payload& gp) {
  return txn(gp).ext.meta;
}
inline const tlp_txn& txn(const tlm::tlm_generic_payload& gp) {
  return static_cast<const tlp_txn&>(gp);
}
inline const pcie::tlp_header& hdr(const tlm::tlm_generic_payload& gp) {
  return txn(gp).ext.hdr;
}
inline const pcie::tlp_meta& meta(const tlm::tlm_generic_payload& gp) {
  return txn(gp).ext.meta;
}

// Asks the cache for `gp`'s header and bookkeeping, which the next step reads: a TLP that
// waited in a queue while thousands of others moved is usually out of the cache by then.
inline void prefetch(const tlm::tlm_generic_payload& gp) {
  const auto& e = txn(gp).ext;
  const char* hdr = reinterpret_cast<const char*>(&e.hdr);
  const char* meta = reinterpret_cast<const char*>(&e.meta);
  const char* from = std::min(hdr, meta);
  const char* to = std::max(hdr + sizeof e.hdr, meta + sizeof e.meta);  // past both
  constexpr size_t cache_line = 64;
  for (const char* at = from; at < to; at += cache_line) __builtin_prefetch(at);
  __builtin_prefetch(to - 1);  // the line the last bytes are on, wherever `from` falls
}

// A simulation's TLPs: its owner (core::fabric_system, a test rig) makes it before the modules
// that allocate from it and destroys it after them. Modules that allocate get it by reference;
// one that only answers a request takes it from the request (`of`), so two simulations in one
// process never count or reuse each other's transactions.
class tlp_pool : public tlm::tlm_mm_interface {
 public:
  tlp_pool() = default;
  // Every transaction it made points back to it (its memory manager).
  tlp_pool(const tlp_pool&) = delete;
  tlp_pool& operator=(const tlp_pool&) = delete;
  // The pool `gp` came from (every TLP is a tlp_txn made by a tlp_pool): a field, not a
  // virtual call or a lookup.
  static tlp_pool& of(const tlm::tlm_generic_payload& gp) { return *txn(gp).pool; }
  // A fresh TLP with `h` as header and room for its payload; reference count 1.
  tlp_txn& make(const pcie::tlp_header& h, uint32_t stream);
  void free(tlm::tlm_generic_payload* gp) override;
  // Burst fidelity: a transaction that stands for `tlps` TLPs of at most `unit` bytes.
  tlp_txn& make_burst(const pcie::tlp_header& h, uint32_t stream, uint32_t tlps, uint32_t unit);
  // A component re-emits burst `t` as `tlps` smaller TLPs of at most `unit` bytes: returns a
  // new burst for them (new TLPs, as when it cuts a TLP), which takes `t`'s payload. `t` keeps
  // its header and the TLPs it stands for: the credits its receiver gives back when it frees
  // its buffer are those `t` took.
  tlp_txn& re_emit(tlp_txn& t, uint32_t tlps, uint32_t unit);
  // Burst fidelity: cuts request burst `t` (a write or read request burst) after its first
  // `tlps` TLPs, the first `bytes` of it: returns a new burst for those and leaves the rest
  // in `t`. The TLPs are the same, so the run's TLP count does not change. A read's pieces
  // keep its tag: their completions come back one after the other, in address order.
  tlp_txn& split_burst(tlp_txn& t, uint32_t tlps, uint32_t bytes);
  uint64_t created() const { return m_serial; }  // transactions made so far
  // Sets a request burst's first_bytes and last_bytes from its header and unit.
  static void set_request_ends(tlp_txn& t);
  uint64_t tlps() const { return m_tlps; }  // TLPs they stand for (the run's TLP count)
  // The most transactions alive at once (TLPs, at burst fidelity bursts): what the fabric
  // held in flight at its fullest, the simulation's working set.
  uint64_t peak_alive() const { return m_all.size(); }
  ~tlp_pool() override;

 private:
  std::vector<tlp_txn*> m_free;
  std::vector<tlp_txn*> m_all;
  uint64_t m_serial = 0;
  uint64_t m_tlps = 0;
};

}  // namespace p2psim::transport
