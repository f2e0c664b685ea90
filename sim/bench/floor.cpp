#include "sim/bench/floor.h"

#include <chrono>
#include <memory>
#include <stdexcept>
#include <vector>

#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/peq_with_cb_and_phase.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <systemc>
#include <tlm>

#include "sim/core/peak_rss.h"

namespace p2psim::bench {

using namespace sc_core;

namespace {

// One 256 B TLP's time on a Gen3 x16 link, and that plus a few nanoseconds of wire: the
// floor keeps about as many transactions in flight per hop as the modelled fabric does.
const sc_time send_interval(16, SC_NS);
const sc_time hop_delay(20, SC_NS);

// Payloads are reused, never allocated per transaction (as the model's TLP pool does).
class payload_pool : public tlm::tlm_mm_interface {
 public:
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
  source(sc_module_name n, uint64_t transactions, uint64_t long_ones)
      : sc_module(n), m_left(transactions), m_total(transactions), m_long(long_ones) {
    SC_THREAD(main);
  }

 private:
  void main() {
    uint64_t share = 0;
    for (; m_left > 0; --m_left) {
      tlm::tlm_generic_payload& gp = m_pool.get();
      gp.set_command(tlm::TLM_WRITE_COMMAND);
      gp.set_address(m_left * 256);
      tlm::tlm_phase ph = tlm::BEGIN_REQ;
      sc_time d = hop_delay;
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
};

class forwarder : public sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<forwarder> in;  // the source may skip one
  tlm_utils::simple_initiator_socket<forwarder> out;
  forwarder(sc_module_name n, uint64_t& hops)
      : sc_module(n), m_hops(hops), m_held("held", this, &forwarder::hop_done) {
    in.register_nb_transport_fw(this, &forwarder::fw);
  }

 private:
  tlm::tlm_sync_enum fw(int, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_time& d) {
    m_held.notify(gp, ph, d);
    ph = tlm::END_REQ;  // accepted at once: the floor has no back-pressure to model
    return tlm::TLM_UPDATED;
  }
  void hop_done(tlm::tlm_generic_payload& gp, const tlm::tlm_phase&) {
    ++m_hops;
    tlm::tlm_phase ph = tlm::BEGIN_REQ;
    sc_time d = hop_delay;
    out->nb_transport_fw(gp, ph, d);
  }

  uint64_t& m_hops;
  tlm_utils::peq_with_cb_and_phase<forwarder> m_held;
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

floor_figures run_floor(uint64_t transactions, uint64_t hops) {
  if (transactions == 0 || hops < transactions || hops > 64 * transactions)
    throw std::invalid_argument("a floor needs 1 to 64 hops per transaction");
  auto wall0 = std::chrono::steady_clock::now();
  floor_figures f;
  const uint64_t chain_length = (hops + transactions - 1) / transactions;
  const uint64_t long_ones = hops - transactions * (chain_length - 1);
  source src("source", transactions, long_ones);
  std::vector<std::unique_ptr<forwarder>> chain;
  for (uint64_t i = 0; i < chain_length; ++i) {
    chain.push_back(std::make_unique<forwarder>(sc_gen_unique_name("forwarder"), f.hops));
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
  f.simulated_ns = uint64_t(sc_time_stamp().to_seconds() * 1e9 + 0.5);
  f.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  f.peak_rss_kib = core::peak_rss_kib();
  return f;
}

}  // namespace p2psim::bench
