// A thread that waits for DMA streams (wait_until_landed) returns when the last of them has
// finished and its last byte landed, whichever order they finish in, and only then; several
// threads may wait for one stream.
#include <catch2/catch.hpp>

#include <systemc>
#include <vector>

#include "models/transport/sim_clock.h"
#include "models/transport/stream_log.h"

namespace {
using p2psim::transport::now_ps;
using p2psim::transport::stream_log;

class waiters : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(waiters);
  explicit waiters(sc_core::sc_module_name n) : sc_module(n) {
    a = log.open(100);
    b = log.open(50);
    SC_THREAD(wait_both);
    SC_THREAD(wait_b);
    SC_THREAD(wait_b_too);
    SC_THREAD(wait_done);
    SC_THREAD(land);
  }
  stream_log log;
  uint32_t a = 0, b = 0;
  uint64_t both_ps = 0, b_ps = 0, b_too_ps = 0, done_ps = 1;

 private:
  void wait_both() {  // a first, though b finishes first
    const std::vector<uint32_t> ids = {a, b};
    p2psim::transport::wait_until_landed(log, ids);
    both_ps = now_ps();
  }
  void wait_b() {
    p2psim::transport::wait_until_landed(log, b);
    b_ps = now_ps();
  }
  void wait_b_too() {
    log.wait_finished(b);
    b_too_ps = now_ps();
  }
  void wait_done() {  // stream 0 (traffic of no stream) is always finished
    log.wait_finished(0);
    done_ps = now_ps();
  }
  void land() {
    wait(1, sc_core::SC_US);
    log.landed(a, 60, now_ps());  // a is not finished by this
    wait(1, sc_core::SC_US);
    // b's last byte is stored 300 ns from now (the memory's write latency): it has finished,
    // and whoever waits for it to land waits until then.
    log.landed(b, 50, now_ps() + 300'000);
    wait(1, sc_core::SC_US);
    log.failed(a, 40, now_ps());  // refused bytes finish a stream too
  }
};
}  // namespace

TEST_CASE("a thread waiting for streams returns when the last has finished and landed",
          "[transport]") {
  waiters w("waiters");
  sc_core::sc_start();
  CHECK(w.done_ps == 0);
  CHECK(w.b_too_ps == 2'000'000);  // finished at 2 us
  CHECK(w.b_ps == 2'300'000);      // and landed 300 ns later
  CHECK(w.both_ps == 3'000'000);   // a finished at 3 us, b had landed by then
  CHECK(w.log[w.b].waiters.empty());
  CHECK(w.log[w.a].waiters.empty());
}
