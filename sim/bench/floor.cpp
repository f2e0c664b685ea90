#include "sim/bench/floor.h"

#include <chrono>
#include <deque>
#include <memory>
#include <stdexcept>
#include <vector>

#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <systemc>
#include <tlm>

#include "sim/core/peak_rss.h"

namespace p2psim::bench {

using namespace sc_core;

namespace {

// One 256 B TLP's time on a Gen3 x16 link, and that plus a few nanoseconds of wire: the
// floor keeps about as many transactions in flight per hop as a fabric with nothing queued
// does (a few in all).
const sc_time send_interval(16, SC_NS);
const sc_time default_hop_delay(20, SC_NS);

// Payloads are reused, never allocated per transaction (as the model's TLP pool does).
class payload_pool : public tlm::tlm_mm_interface {
 public:
  size_t size() const { return m_all.size(); }  // the most ever out at once
  tlm::tlm_generic_payload& get() {
    if (m_free.empty()) {
      m_all.push_back(std::make_unique<tlm::tlm_generic_payload>(this));
      m_free.push_back(m_all.back().get());
    }
    tlm::tlm_generic_payload* gp = m_free.back();
    m_free.pop_back();
    gp->acquire();
    return *gp;
  }
  void free(tlm::tlm_generic_payload* gp) override {
    gp->reset();
    m_free.push_back(gp);
  }

 private:
  std::vector<std::unique_ptr<tlm::tlm_generic_payload>> m_all;
  std::vector<tlm::tlm_generic_payload*> m_free;
};

// Sends `long_ones` of its transactions into the first forwarder (the whole chain) and the
// others into the second (one hop fewer), spread evenly.
class source : public sc_module {
 public:
  tlm_utils::simple_initiator_socket<source> to_first, to_second;
  SC_HAS_PROCESS(source);
  source(sc_module_name n, uint64_t transactions, uint64_t long_ones, sc_time hop_delay)
      : sc_module(n),
        m_left(transactions),
        m_total(transactions),
        m_long(long_ones),
        m_hop_delay(hop_delay) {
    SC_THREAD(main);
  }
  uint64_t peak_in_flight() const { return m_pool.size(); }

 private:
  void main() {
    uint64_t share = 0;
    for (; m_left > 0; --m_left) {
      tlm::tlm_generic_payload& gp = m_pool.get();
      gp.set_command(tlm::TLM_WRITE_COMMAND);
      gp.set_address(m_left * 256);
      tlm::tlm_phase ph = tlm::BEGIN_REQ;
      sc_time d = m_hop_delay;
      share += m_long;
      if (share >= m_total) {
        share -= m_total;
        to_first->nb_transport_fw(gp, ph, d);
      } else {
        to_second->nb_transport_fw(gp, ph, d);
      }
      wait(send_interval);
    }
  }

  payload_pool m_pool;
  uint64_t m_left, m_total, m_long;
  const sc_time m_hop_delay;
};

// Holds each transaction for its hop delay and hands it on. Every transaction comes with the
// same delay, so they are due in the order they came: a FIFO and one timed event for its
// head (one timed event per hop), which costs the same whatever the number held.
// (tlm_utils::peq_with_cb_and_phase keeps a sorted list that each insertion walks from its
// head: with thousands held, the walk, not the kernel, would be the floor's cost.)
class forwarder : public sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<forwarder> in;  // the source may skip one
  tlm_utils::simple_initiator_socket<forwarder> out;
  SC_HAS_PROCESS(forwarder);
  forwarder(sc_module_name n, uint64_t& hops, sc_time hop_delay)
      : sc_module(n), m_hops(hops), m_hop_delay(hop_delay) {
    in.register_nb_transport_fw(this, &forwarder::fw);
    SC_METHOD(hand_on);
    sensitive << m_due;
    dont_initialize();
  }

 private:
  tlm::tlm_sync_enum fw(int, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_time& d) {
    m_held.push_back({sc_time_stamp() + d, &gp});
    if (m_held.size() == 1) m_due.notify(d);
    ph = tlm::END_REQ;  // accepted at once: the floor has no back-pressure to model
    return tlm::TLM_UPDATED;
  }
  void hand_on() {
    const sc_time now = sc_time_stamp();
    while (!m_held.empty() && m_held.front().due <= now) {
      tlm::tlm_generic_payload& gp = *m_held.front().gp;
      m_held.pop_front();
      ++m_hops;
      tlm::tlm_phase ph = tlm::BEGIN_REQ;
      sc_time d = m_hop_delay;
      out->nb_transport_fw(gp, ph, d);
    }
    if (!m_held.empty()) m_due.notify(m_held.front().due - now);
  }

  struct held {
    sc_time due;
    tlm::tlm_generic_payload* gp;
  };
  uint64_t& m_hops;
  const sc_time m_hop_delay;
  std::deque<held> m_held;
  sc_event m_due;
};

class sink : public sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<sink> in;
  explicit sink(sc_module_name n) : sc_module(n) { in.register_nb_transport_fw(this, &sink::fw); }
  uint64_t received = 0;

 private:
  tlm::tlm_sync_enum fw(int, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_time&) {
    ++received;
    gp.release();
    ph = tlm::END_REQ;
    return tlm::TLM_COMPLETED;
  }
};

}  // namespace

floor_figures run_floor(uint64_t transactions, uint64_t hops, uint64_t in_flight) {
  if (transactions == 0 || hops < transactions || hops > 64 * transactions)
    throw std::invalid_argument("a floor needs 1 to 64 hops per transaction");
  auto wall0 = std::chrono::steady_clock::now();
  floor_figures f;
  const uint64_t chain_length = (hops + transactions - 1) / transactions;
  const uint64_t long_ones = hops - transactions * (chain_length - 1);
  // Little's law: a transaction lives hops/transactions hop delays, and one starts every
  // send interval.
  const sc_time hop_delay =
      in_flight ? send_interval * (double(in_flight) * double(transactions) / double(hops))
                : default_hop_delay;
  source src("source", transactions, long_ones, hop_delay);
  std::vector<std::unique_ptr<forwarder>> chain;
  for (uint64_t i = 0; i < chain_length; ++i) {
    chain.push_back(
        std::make_unique<forwarder>(sc_gen_unique_name("forwarder"), f.hops, hop_delay));
    if (i > 0) chain[i - 1]->out.bind(chain[i]->in);
  }
  sink end("sink");
  src.to_first.bind(chain[0]->in);
  if (chain_length > 1)
    src.to_second.bind(chain[1]->in);
  else
    src.to_second.bind(end.in);  // never used: every transaction takes the one hop
  chain.back()->out.bind(end.in);
  sc_start();
  f.transactions = end.received;
  f.peak_in_flight = src.peak_in_flight();
  f.simulated_ns = uint64_t(sc_time_stamp().to_seconds() * 1e9 + 0.5);
  f.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  f.peak_rss_kib = core::peak_rss_kib();
  return f;
}

}  // namespace p2psim::bench
