// The guide's samples (GPUDirect RDMA 13.3, 6.2 Pinning, 6.3 Unpinning, 6.4 Handling the free
// callback, 6.5 Buffer ID Tag Check), written as a driver author writes them against nv-p2p.h
// and cuda.h, with the guide's names, and run against the driver model.
#include <catch2/catch.hpp>

#include "models/driver/cuda/cuda.h"
#include "models/driver/nvidia/nv-p2p.h"
#include "tests/conformance/fixture.h"

namespace {

typedef uint64_t u64;

// ---- 6.2, kernel side ----
#define GPU_BOUND_SHIFT 16
#define GPU_BOUND_SIZE ((u64)1 << GPU_BOUND_SHIFT)
#define GPU_BOUND_OFFSET (GPU_BOUND_SIZE - 1)
#define GPU_BOUND_MASK (~GPU_BOUND_OFFSET)

struct kmd_state {
  nvidia_p2p_page_table_t* page_table = nullptr;
  int pending_transfers = 0;  // DMAs the device still has in flight
  int callbacks = 0;
  int waited_for = 0;  // transfers the callback waited for
};

void wait_for_pending_transfers(kmd_state* state) {
  // The device finishes what it started; the simulation spends simulated time here.
  state->waited_for += state->pending_transfers;
  state->pending_transfers = 0;
}

// 6.4: the callback waits for pending transfers, then frees the page table. (The guide's
// listing says nvidia_p2p_free_pages; the API it documents is nvidia_p2p_free_page_table.)
void free_callback(void* data) {
  kmd_state* state = static_cast<kmd_state*>(data);
  ++state->callbacks;
  wait_for_pending_transfers(state);
  nvidia_p2p_free_page_table(state->page_table);
}

int kmd_pin_memory(kmd_state* my_state, void* address, size_t size) {
  // do proper alignment, as required by NVIDIA kernel driver
  u64 virt_start = (u64)address & GPU_BOUND_MASK;
  size_t pin_size = ((u64)address + size - virt_start + GPU_BOUND_SIZE - 1) & GPU_BOUND_MASK;
  if (!size) return -EINVAL;
  int ret = nvidia_p2p_get_pages(0, 0, virt_start, pin_size, &my_state->page_table, free_callback,
                                 my_state);
  return ret;  // 0: pinned, page_table can be accessed
}

// ---- 6.3 ----
int unpin_memory(void* address, size_t, nvidia_p2p_page_table_t* page_table) {
  return nvidia_p2p_put_pages(0, 0, (u64)address, page_table);
}

// ---- 6.2, user side ----
bool pin_buffer(void* address, size_t size, kmd_state* state) {
  unsigned int flag = 1;
  CUresult status =
      cuPointerSetAttribute(&flag, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, (CUdeviceptr)address);
  if (CUDA_SUCCESS == status) {
    // GPU path: pass_to_kernel_driver(address, size)
    return kmd_pin_memory(state, address, size) == 0;
  }
  return false;  // CPU path
}

// ---- 6.5 ----
struct buf {
  CUdeviceptr pointer;
  size_t size;
  CUdeviceptr aligned_pointer;
  size_t aligned_size;
  int is_pinned;
  uint64_t id;  // buffer id obtained right after pinning
};
enum { ERROR_INVALIDATED = 1, ERROR_SERIOUS = 2 };

int buf_is_gpu_pinning_valid(struct buf* buf) {
  uint64_t buffer_id;
  int retcode;
  // get the current buffer id
  retcode = cuPointerGetAttribute(&buffer_id, CU_POINTER_ATTRIBUTE_BUFFER_ID, buf->pointer);
  if (CUDA_ERROR_INVALID_VALUE == retcode) {
    // the device pointer is no longer valid; it could have been deallocated
    return ERROR_INVALIDATED;
  } else if (CUDA_SUCCESS != retcode) {
    return ERROR_SERIOUS;
  }
  if (buf->id != buffer_id)
    // the original buffer has been deallocated and the cached mapping should be
    // invalidated and the buffer re-pinned
    return ERROR_INVALIDATED;
  return 0;
}

CUdeviceptr setup_and_alloc(size_t bytes) {
  REQUIRE(cuInit(0) == CUDA_SUCCESS);
  CUdevice dev;
  REQUIRE(cuDeviceGet(&dev, 0) == CUDA_SUCCESS);
  CUcontext ctx;
  REQUIRE(cuCtxCreate(&ctx, 0, dev) == CUDA_SUCCESS);
  CUdeviceptr p = 0;
  REQUIRE(cuMemAlloc(&p, bytes) == CUDA_SUCCESS);
  return p;
}

}  // namespace

TEST_CASE("6.2: the guide's pin path pins a 64 KiB-aligned range after SYNC_MEMOPS", "[guide]") {
  p2psim::test::world w;
  CUdeviceptr p = setup_and_alloc(300000);
  kmd_state state;
  REQUIRE(pin_buffer((void*)(p + 1000), 200000, &state));
  REQUIRE(state.page_table != nullptr);
  CHECK(NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE(state.page_table));
  // [p + 1000, p + 201000) rounded out to 64 KiB pages.
  u64 start = (p + 1000) & GPU_BOUND_MASK;
  u64 end = (p + 201000 + GPU_BOUND_OFFSET) & GPU_BOUND_MASK;
  CHECK(state.page_table->entries == (end - start) / GPU_BOUND_SIZE);
  unsigned int sync = 0;
  REQUIRE(cuPointerGetAttribute(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p) == CUDA_SUCCESS);
  CHECK(sync == 1);
  // The CPU path: a host pointer is not GPU memory.
  int host = 0;
  kmd_state other;
  CHECK_FALSE(pin_buffer(&host, sizeof host, &other));
}

TEST_CASE("6.3: the guide's unpin returns the BAR1 pages", "[guide]") {
  p2psim::test::world w;
  CUdeviceptr p = setup_and_alloc(4 * GPU_BOUND_SIZE);
  kmd_state state;
  REQUIRE(pin_buffer((void*)p, 4 * GPU_BOUND_SIZE, &state));
  CHECK(w.bar1(0).mapped_pages() == 4);
  CHECK(unpin_memory((void*)p, 4 * GPU_BOUND_SIZE, state.page_table) == 0);
  CHECK(w.bar1(0).mapped_pages() == 0);
  CHECK(cuMemFree(p) == CUDA_SUCCESS);
  CHECK(state.callbacks == 0);  // unpinned first: nothing to revoke
}

TEST_CASE("6.4: cuMemFree calls the guide's free callback, which waits for transfers", "[guide]") {
  p2psim::test::world w;
  CUdeviceptr p = setup_and_alloc(2 * GPU_BOUND_SIZE);
  kmd_state state;
  REQUIRE(pin_buffer((void*)p, 2 * GPU_BOUND_SIZE, &state));
  state.pending_transfers = 3;
  REQUIRE(cuMemFree(p) == CUDA_SUCCESS);
  CHECK(state.callbacks == 1);
  CHECK(state.waited_for == 3);
  CHECK(w.bar1(0).mapped_pages() == 0);
  // 6.4 step 3: the NVIDIA driver unmapped it, so nvidia_p2p_put_pages must not be called;
  // since R535 a late call returns 0 and does nothing (4.2), and the model reports it.
  const uint64_t unpins = w.driver().counters().unpins;
  CHECK(unpin_memory((void*)p, 2 * GPU_BOUND_SIZE, state.page_table) == 0);
  CHECK(w.driver().counters().unpins == unpins);
  CHECK(w.driver().counters().misuse == 1);
}

TEST_CASE("6.5: the buffer-ID tag check catches a free and a reallocation", "[guide]") {
  p2psim::test::world w;
  CUdeviceptr p = setup_and_alloc(GPU_BOUND_SIZE);
  struct buf b = {};
  b.pointer = p;
  b.size = GPU_BOUND_SIZE;
  kmd_state state;
  REQUIRE(pin_buffer((void*)p, b.size, &state));
  b.is_pinned = 1;
  REQUIRE(cuPointerGetAttribute(&b.id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p) == CUDA_SUCCESS);
  CHECK(buf_is_gpu_pinning_valid(&b) == 0);
  REQUIRE(cuMemFree(p) == CUDA_SUCCESS);
  CHECK(state.callbacks == 1);  // "the kernel-space callback would have been invoked"
  CHECK(buf_is_gpu_pinning_valid(&b) == ERROR_INVALIDATED);  // freed
  CUdeviceptr q = 0;
  REQUIRE(cuMemAlloc(&q, GPU_BOUND_SIZE) == CUDA_SUCCESS);
  REQUIRE(q == p);                                           // the VA is reused...
  CHECK(buf_is_gpu_pinning_valid(&b) == ERROR_INVALIDATED);  // ...but the ID tells them apart
}
