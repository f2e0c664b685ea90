// Two fabrics in one process share nothing: each has its own ordering table and choice source
// (pcie::order_policy), its own TLP pool (transport::tlp_pool), and its own driver stack
// (kernel::os over an nvidia_driver over that fabric's GPUs), reached through the C entry
// points by binding its OS. SystemC
// elaborates once per process, so both fabrics are elaborated side by side (each inside a
// module of its own, which keeps their module names apart) and the test never starts the
// simulation: what it checks needs none.
#include <catch2/catch.hpp>

#include <vector>

#include "models/driver/cuda/cuda.h"
#include "models/driver/kernel/kernel.h"
#include "models/driver/nvidia/nv-p2p.h"
#include "models/driver/nvidia/nvidia_driver.h"
#include "models/pcie/order_policy.h"
#include "models/transport/tlp_txn.h"
#include "sim/core/driver_gpus.h"
#include "sim/core/system.h"
#include "sim/topology/address_map.h"
#include "sim/topology/topology_loader.h"

namespace {

using namespace p2psim;

topo::topology load(const std::string& rel) {
  topo::load_options opt;
  opt.platform_dirs = {P2PSIM_SOURCE_DIR "/topologies/platforms"};
  return topo::load_topology(P2PSIM_SOURCE_DIR "/" + rel, opt);
}

// One fabric with a driver stack of its own, as a program runner builds them.
struct fabric : sc_core::sc_module {
  topo::topology topology;
  topo::address_map addresses;
  core::fabric_system sys;
  nv::nvidia_driver driver;
  kernel::os os;
  fabric(sc_core::sc_module_name n, const pcie::order_policy& order)
      : sc_module(n),
        topology(load("topologies/switch_only.yaml")),
        addresses(topo::enumerate(topology)),
        sys(topology, addresses, false, order),
        os(driver) {
    core::add_gpus(driver, sys);
  }
  gpu::gpu& gpu0() { return *sys.find_gpu("gpu0"); }
};

void ignore_callback(void*) {}

// In the OS bound now: a context on GPU 0, 64 KiB of its memory, pinned for a peer.
nvidia_p2p_page_table_t* pin_one() {
  CUcontext ctx = nullptr;
  CUdeviceptr p = 0;
  REQUIRE(cuInit(0) == CUDA_SUCCESS);
  REQUIRE(cuCtxCreate(&ctx, 0, 0) == CUDA_SUCCESS);
  REQUIRE(cuMemAlloc(&p, 64 * 1024) == CUDA_SUCCESS);
  nvidia_p2p_page_table_t* t = nullptr;
  REQUIRE(nvidia_p2p_get_pages(0, 0, p, 64 * 1024, &t, ignore_callback, nullptr) == 0);
  return t;
}

}  // namespace

TEST_CASE("two fabrics in one process share no ordering rules or choices", "[context][ordering]") {
  pcie::replay_choices choices_a(std::vector<size_t>(8, 1)), choices_b;
  pcie::order_policy mutated{{}, &choices_a};
  mutated.rules.disable(pcie::order_rule::p_p);
  fabric a("a", mutated), b("b", pcie::order_policy{{}, &choices_b});

  CHECK_FALSE(a.sys.order().rules.enabled(pcie::order_rule::p_p));
  CHECK(b.sys.order().rules.enabled(pcie::order_rule::p_p));  // the mutation stayed in a
  // Every queue of a fabric follows that fabric's policy.
  for (auto* f : {&a, &b})
    for (const auto& l : f->sys.links()) {
      CHECK(&l.link->downstream().order() == &f->sys.order());
      CHECK(&l.link->upstream().order() == &f->sys.order());
    }
  for (auto* f : {&a, &b})
    for (const auto& q : f->sys.interconnects())
      CHECK(&q.link->a_to_b().order() == &f->sys.order());

  // A kernel reading a pending RDMA write on a's GPU asks a's source, not b's.
  for (auto* f : {&a, &b}) f->gpu0().visibility().set_kernels_observe(true);
  const std::vector<uint8_t> landed(32, 7);
  a.gpu0().visibility().landing(0, landed);
  a.gpu0().vram().write(0, landed);
  std::vector<uint8_t> seen(32);
  a.gpu0().visibility().kernel_read(0, seen, gpu::consumer::peer);
  CHECK(seen == std::vector<uint8_t>(32, 0));  // a's source said "not yet"
  CHECK(choices_a.taken().size() == 1);
  CHECK(choices_b.taken().empty());
  b.gpu0().visibility().landing(0, landed);
  b.gpu0().vram().write(0, landed);
  b.gpu0().visibility().kernel_read(0, seen, gpu::consumer::peer);
  CHECK(seen == landed);  // b's source took the in-order alternative: visible
  CHECK(choices_a.taken().size() == 1);
  CHECK(choices_b.taken().size() == 1);
}

TEST_CASE("two fabrics in one process have driver stacks of their own", "[context][driver]") {
  fabric a("a", {}), b("b", {});
  CHECK(kernel::bound_os() == nullptr);  // nothing exists before someone makes it

  nvidia_p2p_page_table_t* in_a = nullptr;
  {
    kernel::running_in in(a.os);
    kernel::as_process as(100);
    in_a = pin_one();
    CHECK(a.os.current_pid() == 100);
    CHECK(b.os.current_pid() == 0);  // `current` is per OS
  }
  CHECK(a.os.current_pid() == 0);  // restored
  // The pin is a's: its driver, its GPU model's BAR1 page table.
  CHECK(a.driver.live_pins() == 1);
  CHECK(a.gpu0().bar1().mapped_pages() == 1);
  CHECK(b.driver.live_pins() == 0);
  CHECK(b.gpu0().bar1().mapped_pages() == 0);

  {
    kernel::running_in in(b.os);
    kernel::as_process as(100);  // the same pid in another OS is another process
    CUdeviceptr p = 0;
    CHECK(cuMemAlloc(&p, 64 * 1024) == CUDA_ERROR_NOT_INITIALIZED);  // a's cuInit is not b's
    nvidia_p2p_page_table_t* in_b = pin_one();
    CHECK(in_b != in_a);
    {
      kernel::running_in nested(a.os);  // bindings nest
      CHECK(&kernel::current_os() == &a.os);
      CHECK(kernel::current_pid() == 0);
    }
    CHECK(&kernel::current_os() == &b.os);  // and restore
    CHECK(kernel::current_pid() == 100);
  }
  CHECK(a.driver.live_pins() == 1);
  CHECK(b.driver.live_pins() == 1);
  CHECK(b.gpu0().bar1().mapped_pages() == 1);
  CHECK(a.gpu0().bar1().mapped_pages() == 1);

  // Freeing in a revokes a's pin only.
  {
    kernel::running_in in(a.os);
    kernel::as_process as(100);
    a.driver.process_exit(100);
  }
  CHECK(a.driver.live_pins() == 0);
  CHECK(a.gpu0().bar1().mapped_pages() == 0);
  CHECK(b.driver.live_pins() == 1);
  CHECK(b.gpu0().bar1().mapped_pages() == 1);
}

TEST_CASE("two fabrics in one process have TLP pools of their own", "[context][pool]") {
  fabric a("a", {}), b("b", {});
  transport::tlp_pool &pa = a.sys.pool(), &pb = b.sys.pool();
  REQUIRE(&pa != &pb);
  CHECK(pa.created() == 0);  // elaborating a fabric sends nothing
  CHECK(pb.created() == 0);

  pcie::tlp_header h;
  h.type = pcie::tlp_type::mwr;
  h.address = 0x1000;
  h.length = 64;
  transport::tlp_txn& in_a = pa.make(h, 0);
  CHECK(&transport::tlp_pool::of(in_a) == &pa);  // what a completer answering it would use
  CHECK(pa.created() == 1);
  CHECK(pa.tlps() == 1);
  CHECK(pb.created() == 0);  // not counted in b's run
  CHECK(pb.tlps() == 0);

  // Released, it goes back to a's pool: b makes a transaction of its own rather than take it.
  in_a.release();
  transport::tlp_txn& in_b = pb.make(h, 0);
  CHECK(&in_b != &in_a);
  CHECK(&transport::tlp_pool::of(in_b) == &pb);
  CHECK(pb.created() == 1);
  CHECK(pa.created() == 1);
  // While a reuses it.
  transport::tlp_txn& again = pa.make(h, 0);
  CHECK(&again == &in_a);
  CHECK(pa.created() == 2);
  CHECK(pb.created() == 1);
  again.release();
  in_b.release();
}
