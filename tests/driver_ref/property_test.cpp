// The driver models against the reference model (tests/driver_ref/reference.h) under random
// call sequences: cuCtx* (peer access included), cuMemAlloc/cuMemFree (1 B to 1 MiB, so small
// buffers share 64 KiB pages), process exit, pointer attributes, copies, every nv-p2p call with
// misuse mixed in, callbacks that call back into the API, dma-buf exports and their descriptors,
// peers reading and writing through what a pin, a DMA mapping or the kernel driver's region
// gave them, and the registration cache. Every return value, callback, BAR1 page, the VRAM in
// use and every VRAM byte are compared after every call (docs/testing.md).
// Each case is a fixed seed and count, so ctest runs the same sequences every time; RapidCheck
// shrinks a failing sequence to a short one and prints it.
#include <rapidcheck.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <iostream>
#include <map>

#include "tests/driver_ref/harness.h"

using namespace p2psim::driver_ref;

namespace {

// The op mix of a world (harness_config): `contexts_first` gives more contexts and peer access
// among them, fewer pins; the other `..._first` flags make their calls ten times as often.
rc::Gen<op> gen_op(const harness_config& c) {
  const size_t k = c.contexts_first ? 4 : 1, v = c.vmm_first ? 10 : 1, r = c.rdma_first ? 10 : 1,
               i = c.ipc_first ? 10 : 1, d = c.dma_buf_first ? 10 : 1;
  return rc::gen::weightedElement<op>({
      {4 * k, op::ctx_create},
      {1, op::ctx_destroy},
      {2 * k, op::ctx_set_current},
      {12, op::mem_alloc},
      {6, op::mem_free},
      {1, op::process_exit},
      {3, op::get_attribute},
      {2, op::get_attributes},
      {1, op::set_sync_memops},
      {3, op::memcpy_htod},
      {2, op::memcpy_dtoh},
      {10, op::get_pages},
      {3, op::get_pages_persistent},
      {5, op::put_pages},
      {2, op::put_pages_persistent},
      {1, op::free_page_table},
      {3, op::dma_map},
      {2, op::dma_unmap},
      {1, op::free_dma_mapping},
      {6 * d, op::peer_write},
      {3 * d, op::peer_read},
      {3, op::kmd_pin},
      {2 * d, op::kmd_unpin},
      {3, op::regcache_acquire},
      {2, op::regcache_release},
      {5 * k * k, op::ctx_peer_access},
      {1 * k, op::can_access_peer},
      {3 * k, op::peer_copy},
      {4 * k, op::host_memory},
      {4 * d, op::dma_buf_export},
      {2 * d, op::dma_buf_close},
      {3 * d, op::dma_buf_import},
      {3 * v, op::vmm_create},
      {2 * v, op::vmm_release},
      {3 * v, op::vmm_reserve},
      {1 * v, op::vmm_free},
      {4 * v, op::vmm_map},
      {2 * v, op::vmm_unmap},
      {3 * v, op::vmm_access},
      {3 * v, op::vmm_copy},
      {3 * v, op::vmm_get_pages},
      {3 * r, op::rdma_reg},
      {1 * r, op::rdma_dereg},
      {4 * r, op::rdma_access},
      {2 * i, op::ipc_get},
      {3 * i, op::ipc_open},
      {2 * i, op::ipc_close},
      {3 * i, op::ipc_copy},
  });
}

rc::Gen<command> gen_command(const harness_config& config) {
  return rc::gen::map(
      // Uniform choices (RapidCheck's arbitrary integers grow with the test's size, which would
      // favour the first variants); shrinking still goes towards 0.
      rc::gen::tuple(gen_op(config), rc::gen::inRange<int>(0, 3), rc::gen::inRange<int>(0, 256),
                     rc::gen::inRange<int>(0, int(callback_action::count)),
                     rc::gen::inRange<uint32_t>(0, 1u << 31),
                     rc::gen::inRange<uint32_t>(0, 1u << 31),
                     rc::gen::inRange<uint32_t>(0, 1u << 31)),
      [](const std::tuple<op, int, int, int, uint32_t, uint32_t, uint32_t>& t) {
        command c;
        std::tie(c.what, std::ignore, std::ignore, std::ignore, c.a, c.b, c.c) = t;
        c.proc = uint8_t(std::get<1>(t));
        c.variant = uint8_t(std::get<2>(t));
        c.action = callback_action(std::get<3>(t));
        return c;
      });
}

struct totals {
  size_t sequences = 0, calls = 0;
  std::map<std::string, size_t> counts;
};

// A longer run than ctest's, by hand: P2PSIM_PROPERTY_SCALE=N runs N times the sequences and
// P2PSIM_PROPERTY_SEED=S starts from other seeds (docs/testing.md).
int scaled(int count) {
  const char* s = std::getenv("P2PSIM_PROPERTY_SCALE");
  return s ? count * std::max(1, std::atoi(s)) : count;
}
uint64_t seeded(uint64_t seed) {
  const char* s = std::getenv("P2PSIM_PROPERTY_SEED");
  return s ? seed + std::strtoull(s, nullptr, 10) * 1000 : seed;
}

// Runs `count` random sequences of up to `length` calls from `seed` on a fresh world each.
void check_sequences(const harness_config& config, uint64_t seed, int count, int length) {
  totals t;
  rc::detail::TestParams params;
  params.seed = seeded(seed);
  params.maxSuccess = scaled(count);
  params.maxSize = length;
  rc::detail::TestMetadata meta;
  meta.id = meta.description = "driver models agree with the reference";
  const auto result = rc::detail::checkTestable(
      [&] {
        const auto sequence = *rc::gen::container<std::vector<command>>(gen_command(config));
        harness h(config);
        try {
          h.run_all(sequence);
        } catch (const divergence& d) {
          RC_FAIL(std::string(d.what()) + "\nsequence:\n" + describe(sequence));
        }
        ++t.sequences;
        t.calls += h.steps();
        for (const auto& [k, v] : h.counts()) t.counts[k] += v;
      },
      meta, params);
  std::ostringstream message;
  rc::detail::printResultMessage(result, message);
  INFO(message.str());
  std::cout << "driver property: seed " << params.seed << ": " << t.sequences << " sequences, "
            << t.calls << " calls\n";
  for (const auto& [k, v] : t.counts) std::cout << "  " << k << ": " << v << "\n";
  CHECK(result.is<rc::detail::SuccessResult>());
}

harness_config shared_bar1() {
  return {};
}

harness_config private_bar1() {  // CUDA 6.0: every pin maps anew (guide 4.8)
  harness_config c;
  c.ref.share_bar1 = false;
  return c;
}

harness_config three_gpus() {  // the third out of the others' reach
  harness_config c;
  c.ref.gpus = 3;
  c.contexts_first = true;
  return c;
}

harness_config vmm_memory() {  // VMM calls often, and VRAM for several 2 MiB handles
  harness_config c;
  c.ref.frames = 256;
  c.vmm_first = true;
  return c;
}

harness_config rdma_registrations() {  // RDMA registrations, accesses and frees often
  harness_config c;
  c.rdma_first = true;
  return c;
}

harness_config ipc_between_processes() {  // CUDA IPC often, on two GPUs of reach
  harness_config c;
  c.ipc_first = true;
  return c;
}

harness_config dma_buf_imports() {  // exports imported, closed and released often
  harness_config c;
  c.dma_buf_first = true;
  return c;
}

harness_config one_gpu_tight() {  // VRAM and BAR1 run out often
  harness_config c;
  c.ref.gpus = 1;
  c.ref.frames = 24;
  c.ref.bar1_pages = 48;
  c.ref.bar1_reserved = 40;
  return c;
}

}  // namespace

TEST_CASE("driver property: shared BAR1 pages (4.7) with two GPUs and three processes",
          "[property]") {
  check_sequences(shared_bar1(), 1, 1500, 200);
}

TEST_CASE("driver property: shared BAR1 pages (4.7) with another seed", "[property]") {
  check_sequences(shared_bar1(), 2, 1500, 200);
}

TEST_CASE("driver property: a BAR1 page per pin (4.8)", "[property]") {
  check_sequences(private_bar1(), 3, 1500, 200);
}

TEST_CASE("driver property: VRAM and BAR1 exhausted (5.5)", "[property]") {
  check_sequences(one_gpu_tight(), 4, 1500, 200);
}

TEST_CASE("driver property: three GPUs and peer access between two of them", "[property]") {
  check_sequences(three_gpus(), 6, 1500, 200);
}

TEST_CASE("driver property: long sequences", "[property]") {
  check_sequences(shared_bar1(), 5, 200, 600);
}

TEST_CASE("driver property: VMM memory mapped and pinned and copied and unmapped", "[property]") {
  check_sequences(vmm_memory(), 7, 800, 120);
}

TEST_CASE(
    "driver property: RDMA registrations through nvidia-peermem invalidated by frees and "
    "exits",
    "[property]") {
  check_sequences(rdma_registrations(), 8, 800, 150);
}

TEST_CASE("driver property: CUDA IPC exports opened copied and closed across processes",
          "[property]") {
  check_sequences(ipc_between_processes(), 9, 800, 150);
}

TEST_CASE("driver property: dma-buf exports imported by the kernel driver and released",
          "[property]") {
  check_sequences(dma_buf_imports(), 10, 800, 150);
}
