// A root complex that may commit Relaxed Ordering writes to host memory out of order
// (models/root_complex/write_commit_stage.h; PCIe Base 2.4.1, table 2-40 P-P b, B2b): held
// writes are passed only as the table allows, and never held without a choice source.
#define SC_INCLUDE_DYNAMIC_PROCESSES  // sc_spawn: each request comes in from a thread of its own
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "models/pcie/choices.h"
#include "models/pcie/order_policy.h"
#include "models/root_complex/write_commit_stage.h"
#include "models/transport/sim_clock.h"
#include "models/transport/tlp_txn.h"

using namespace p2psim;
constexpr uint64_t ns = 1000;  // ps

namespace {

struct rig {
  transport::tlp_pool pool;
  pcie::replay_choices choices;
  pcie::order_policy order;
  std::vector<std::string> committed;  // "name@ns", in commit order
  root_complex::write_commit_stage stage;
  std::vector<std::string> names;

  rig(std::vector<size_t> prefix, bool reorders, bool explored = true)
      : choices(std::move(prefix)),
        order{pcie::ordering_rules{}, explored ? &choices : nullptr},
        stage("stage", order, reorders, 100 * ns, [this](int, tlm::tlm_generic_payload& gp) {
          committed.push_back(names[transport::hdr(gp).tag] + "@" +
                              std::to_string(transport::now_ps() / ns));
          gp.release();
        }) {}

  // A request named `name` at `at_ns`.
  void send(const std::string& name, pcie::tlp_type type, uint64_t at_ns, bool ro = false,
            bool ido = false, uint16_t requester = 1) {
    pcie::tlp_header h;
    h.type = type;
    h.address = 0x1000;
    h.length = 64;
    h.requester_id = requester;
    h.attrs.relaxed_ordering = ro;
    h.attrs.id_based_ordering = ido;
    h.tag = uint16_t(names.size());
    names.push_back(name);
    auto& gp = pool.make(h, 0);
    sc_core::sc_spawn([this, &gp, at_ns] {
      sc_core::wait(transport::ps(at_ns * ns));
      stage.receive(0, gp);
    });
  }
  std::vector<std::string> run() {
    sc_core::sc_start(transport::ps(1000 * ns));
    return committed;
  }
};

using v = std::vector<std::string>;

}  // namespace

TEST_CASE("a held write is passed by a later write with RO set", "[root_complex][ordering]") {
  rig r({1, 0}, true);  // data held, flag committed as it comes in
  r.send("data", pcie::tlp_type::mwr, 0);
  r.send("flag", pcie::tlp_type::mwr, 10, true);
  CHECK(r.run() == v{"flag@10", "data@100"});  // data: its hold (the memory latency) is up
}

TEST_CASE("a write without RO commits the held writes before it", "[root_complex][ordering]") {
  rig r({1}, true);
  r.send("data", pcie::tlp_type::mwr, 0, true);
  r.send("flag", pcie::tlp_type::mwr, 10);
  CHECK(r.run() == v{"data@10", "flag@10"});
}

TEST_CASE("a read commits the held writes of its requester before it", "[root_complex][ordering]") {
  rig r({1}, true);
  r.send("write", pcie::tlp_type::mwr, 0, true);
  r.send("read", pcie::tlp_type::mrd, 10, false, true);
  CHECK(r.run() == v{"write@10", "read@10"});
}

TEST_CASE("a read with IDO passes another requester's held write", "[root_complex][ordering]") {
  rig r({1}, true);
  r.send("write", pcie::tlp_type::mwr, 0, true);
  r.send("read", pcie::tlp_type::mrd, 10, false, true, 2);
  CHECK(r.run() == v{"read@10", "write@100"});
}

TEST_CASE("writes are committed as they come in without a choice source",
          "[root_complex][ordering]") {
  rig r({1, 1}, true, false);
  r.send("data", pcie::tlp_type::mwr, 0);
  r.send("flag", pcie::tlp_type::mwr, 10, true);
  CHECK(r.run() == v{"data@0", "flag@10"});
}

TEST_CASE("a platform that keeps writes in order has nothing to decide",
          "[root_complex][ordering]") {
  rig r({1, 1}, false);
  r.send("data", pcie::tlp_type::mwr, 0);
  r.send("flag", pcie::tlp_type::mwr, 10, true);
  CHECK(r.run() == v{"data@0", "flag@10"});
  CHECK(r.choices.taken().empty());
}
