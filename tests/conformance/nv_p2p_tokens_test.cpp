// Tokens (GPUDirect RDMA 13.3, 5.6 Tokens Usage; 4.8: zero tokens for the owning process).
#include <catch2/catch.hpp>

#include "tests/conformance/nv_p2p_fixture.h"

using namespace p2psim;
using test::k64;
using test::p2p_world;

TEST_CASE("5.6: without tokens only the owning process may pin, others find nothing there",
          "[nv-p2p][tokens]") {
  p2p_world w;
  uint64_t va = w.alloc(k64, 100);
  nvidia_p2p_page_table_t* t = nullptr;
  {
    kernel::as_process other(200);
    // -EINVAL, not -EPERM: p2p.c looks only in the caller's VA spaces (docs/driver-model.md)
    CHECK(nvidia_p2p_get_pages(0, 0, va, k64, &t, test::ignore_callback, nullptr) == -EINVAL);
  }
  CHECK(nvidia_p2p_get_pages(0, 0, va, k64, &t, test::ignore_callback, nullptr) ==
        0);  // the owner may
}

TEST_CASE("5.6: with the tokens whoever knows them may pin", "[nv-p2p][tokens]") {
  p2p_world w;
  uint64_t va = w.alloc(k64, 100);
  const auto* ctx = w.driver.find_context(w.context(100));
  nvidia_p2p_page_table_t* t = nullptr;
  kernel::as_process other(200);
  CHECK(nvidia_p2p_get_pages(ctx->p2p_token, ctx->va_space_token, va, k64, &t,
                             test::ignore_callback, nullptr) == 0);
  CHECK(nvidia_p2p_get_pages(ctx->p2p_token ^ 1, ctx->va_space_token, va, k64, &t,
                             test::ignore_callback,
                             nullptr) == -EINVAL);  // a guessed token fails
}

TEST_CASE("5.6: p2pToken is randomized and vaSpaceToken names one VA space", "[nv-p2p][tokens]") {
  nv::driver_config cfg;
  cfg.random_p2p_token = true;  // the guide's drivers; 580 hands out 0 (tests/data/cuda_probe)
  p2p_world w(2, cfg);
  const auto* a = w.driver.find_context(w.context(100, 0));
  const auto* b = w.driver.find_context(w.context(100, 1));
  const auto* c = w.driver.find_context(w.context(300, 0));
  CHECK(a->p2p_token != 0);
  CHECK(a->p2p_token != b->p2p_token);
  CHECK(a->p2p_token != c->p2p_token);
  CHECK(a->va_space_token != b->va_space_token);
  CHECK(a->va_space_token != c->va_space_token);
}

TEST_CASE("4.8: memory not allocated by anyone cannot be pinned", "[nv-p2p][tokens]") {
  p2p_world w;
  nvidia_p2p_page_table_t* t = nullptr;
  CHECK(nvidia_p2p_get_pages(0, 0, nv::uva_base + 64 * k64, k64, &t, test::ignore_callback,
                             nullptr) == -EINVAL);
}
