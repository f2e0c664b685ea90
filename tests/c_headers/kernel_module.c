/*
 * A third-party kernel module as its authors would write it, in C (gnu11, as the kernel is
 * built): its user-space half gets GPU memory and the allocation's tokens through cuda.h, its
 * kernel half pins, maps, releases and has pins revoked through nv-p2p.h (GPUDirect RDMA 13.3,
 * 5.3, 6.2-6.5, 7.1-7.3). Every type, enumerator, macro and function of both headers is used at
 * least once, so a header change that breaks C fails to build here; kernel_module_cxx.cpp
 * compiles this same file as C++. Numeric values are checked at compile time (they are the ABI
 * a binary built against the real headers relies on), behaviour at run time against the
 * installed driver model. km_run returns 0, or the line of the first check that failed.
 */
#include "tests/c_headers/kernel_module.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "models/driver/cuda/cuda.h"
#include "models/driver/nvidia/nv-p2p.h"

#ifndef KM_RUN
#define KM_RUN km_run_c
#endif

/* The few spellings C and C++ do not share. nv-p2p.h names the DMA mapping's opaque member
 * `private` in C, as the real header does; in C++ that is a keyword. The registers union is
 * declared inside struct nvidia_p2p_page, which in C++ scopes its name to the struct. */
#ifdef __cplusplus
#define KM_PRIVATE private_data
#define KM_ALIGNOF(T) alignof(T)
#define KM_STATIC_ASSERT(e) static_assert(e, #e)
typedef nvidia_p2p_page::nvidia_p2p_request_registers km_registers;
#else
#define KM_PRIVATE private
#define KM_ALIGNOF(T) _Alignof(T)
#define KM_STATIC_ASSERT(e) _Static_assert(e, #e)
typedef union nvidia_p2p_request_registers km_registers;
#endif

#ifndef NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API
#error "nv-p2p.h must announce the persistent API (guide 4.2)"
#endif

#define KM_CHECK(e)            \
  do {                         \
    if (!(e)) return __LINE__; \
  } while (0)
#define KM_STEP(call)              \
  do {                             \
    int km_line_ = (call);         \
    if (km_line_) return km_line_; \
  } while (0)

enum { KM_GPU_PAGE = 1 << 16 }; /* GPU_BOUND_SIZE (guide 6.2) */

/* ---- the ABI: numeric values of the real headers ---- */

KM_STATIC_ASSERT(CUDA_VERSION == 12020);
KM_STATIC_ASSERT(NVIDIA_P2P_GPU_UUID_LEN == 16 && sizeof(((CUuuid*)0)->bytes) == 16);
KM_STATIC_ASSERT(NVIDIA_P2P_FLAGS_DEFAULT == 0);
KM_STATIC_ASSERT(NVIDIA_P2P_PAGE_SIZE_4KB == 0 && NVIDIA_P2P_PAGE_SIZE_64KB == 1 &&
                 NVIDIA_P2P_PAGE_SIZE_128KB == 2 && NVIDIA_P2P_PAGE_SIZE_COUNT == 3);
KM_STATIC_ASSERT(CU_DEVICE_CPU == -1 && CU_DEVICE_INVALID == -2);
KM_STATIC_ASSERT(CUDA_SUCCESS == 0 && CUDA_ERROR_INVALID_VALUE == 1 &&
                 CUDA_ERROR_OUT_OF_MEMORY == 2 && CUDA_ERROR_NOT_INITIALIZED == 3 &&
                 CUDA_ERROR_DEINITIALIZED == 4 && CUDA_ERROR_NO_DEVICE == 100 &&
                 CUDA_ERROR_INVALID_DEVICE == 101 && CUDA_ERROR_INVALID_CONTEXT == 201 &&
                 CUDA_ERROR_INVALID_HANDLE == 400 && CUDA_ERROR_NOT_FOUND == 500 &&
                 CUDA_ERROR_NOT_READY == 600 && CUDA_ERROR_ILLEGAL_ADDRESS == 700 &&
                 CUDA_ERROR_CONTEXT_IS_DESTROYED == 709 && CUDA_ERROR_NOT_PERMITTED == 800 &&
                 CUDA_ERROR_NOT_SUPPORTED == 801 && CUDA_ERROR_UNKNOWN == 999);
KM_STATIC_ASSERT(CU_POINTER_ATTRIBUTE_CONTEXT == 1 && CU_POINTER_ATTRIBUTE_MEMORY_TYPE == 2 &&
                 CU_POINTER_ATTRIBUTE_DEVICE_POINTER == 3 &&
                 CU_POINTER_ATTRIBUTE_HOST_POINTER == 4 && CU_POINTER_ATTRIBUTE_P2P_TOKENS == 5 &&
                 CU_POINTER_ATTRIBUTE_SYNC_MEMOPS == 6 && CU_POINTER_ATTRIBUTE_BUFFER_ID == 7 &&
                 CU_POINTER_ATTRIBUTE_IS_MANAGED == 8 && CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL == 9 &&
                 CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE == 10 &&
                 CU_POINTER_ATTRIBUTE_RANGE_START_ADDR == 11 &&
                 CU_POINTER_ATTRIBUTE_RANGE_SIZE == 12 && CU_POINTER_ATTRIBUTE_MAPPED == 13 &&
                 CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES == 14 &&
                 CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE == 15);
KM_STATIC_ASSERT(CU_MEMORYTYPE_HOST == 1 && CU_MEMORYTYPE_DEVICE == 2 && CU_MEMORYTYPE_ARRAY == 3 &&
                 CU_MEMORYTYPE_UNIFIED == 4);
KM_STATIC_ASSERT(CU_DEVICE_ATTRIBUTE_INTEGRATED == 18 &&
                 CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING == 41 &&
                 CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY == 83 &&
                 CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED == 110 &&
                 CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED == 116 &&
                 CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS == 117 &&
                 CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING == 118 &&
                 CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED == 124);
KM_STATIC_ASSERT(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST == 1 &&
                 CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_MEMOPS == 2);
KM_STATIC_ASSERT(CU_GPU_DIRECT_RDMA_WRITES_ORDERING_NONE == 0 &&
                 CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER == 100 &&
                 CU_GPU_DIRECT_RDMA_WRITES_ORDERING_ALL_DEVICES == 200);
KM_STATIC_ASSERT(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX == 0);
/* A flush scope names the ordering it reaches (cuda.h). */
KM_STATIC_ASSERT((int)CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER ==
                 (int)CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER);
KM_STATIC_ASSERT((int)CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES ==
                 (int)CU_GPU_DIRECT_RDMA_WRITES_ORDERING_ALL_DEVICES);
KM_STATIC_ASSERT(CU_CTX_SCHED_AUTO == 0 && CU_CTX_SCHED_SPIN == 1 && CU_CTX_SCHED_YIELD == 2 &&
                 CU_CTX_SCHED_BLOCKING_SYNC == 4 && CU_CTX_MAP_HOST == 8 &&
                 CU_CTX_LMEM_RESIZE_TO_MAX == 0x10 && CU_CTX_COREDUMP_ENABLE == 0x20 &&
                 CU_CTX_USER_COREDUMP_ENABLE == 0x40 && CU_CTX_SYNC_MEMOPS == 0x80 &&
                 CU_CTX_FLAGS_MASK == 0xff);
KM_STATIC_ASSERT((CU_CTX_SCHED_SPIN | CU_CTX_SCHED_YIELD | CU_CTX_SCHED_BLOCKING_SYNC) ==
                 CU_CTX_SCHED_MASK);
KM_STATIC_ASSERT(CU_STREAM_DEFAULT == 0 && CU_STREAM_NON_BLOCKING == 1);
KM_STATIC_ASSERT(NVIDIA_P2P_PAGE_TABLE_VERSION == 0x00010002 &&
                 NVIDIA_P2P_DMA_MAPPING_VERSION == 0x00020003);

/* ---- layouts: the test compares what C and C++ see ---- */

static void km_record(struct km_layout* l, const char* what, size_t value) {
  if (l->count < KM_LAYOUT_MAX) {
    l->what[l->count] = what;
    l->value[l->count] = value;
  }
  ++l->count; /* past the end only counted: the test sees the overflow */
}

#define KM_TYPE(T)                           \
  km_record(l, "sizeof(" #T ")", sizeof(T)); \
  km_record(l, "alignof(" #T ")", KM_ALIGNOF(T))
#define KM_MEMBER(T, m) km_record(l, "offsetof(" #T ", " #m ")", offsetof(T, m))

static void km_layouts(struct km_layout* l) {
  l->count = 0;
  KM_TYPE(nvidia_p2p_page_t);
  KM_MEMBER(nvidia_p2p_page_t, physical_address);
  KM_MEMBER(nvidia_p2p_page_t, registers);
  KM_TYPE(km_registers);
  KM_MEMBER(km_registers, fermi.wreqmb_h);
  KM_MEMBER(km_registers, fermi.rreqmb_h);
  KM_MEMBER(km_registers, fermi.rreqmb_0);
  KM_MEMBER(km_registers, fermi.reserved);
  KM_TYPE(struct nvidia_p2p_page_table);
  KM_MEMBER(nvidia_p2p_page_table_t, version);
  KM_MEMBER(nvidia_p2p_page_table_t, page_size);
  KM_MEMBER(nvidia_p2p_page_table_t, pages);
  KM_MEMBER(nvidia_p2p_page_table_t, entries);
  KM_MEMBER(nvidia_p2p_page_table_t, gpu_uuid);
  KM_TYPE(struct nvidia_p2p_dma_mapping);
  KM_MEMBER(nvidia_p2p_dma_mapping_t, version);
  KM_MEMBER(nvidia_p2p_dma_mapping_t, page_size_type);
  KM_MEMBER(nvidia_p2p_dma_mapping_t, entries);
  KM_MEMBER(nvidia_p2p_dma_mapping_t, dma_addresses);
  /* the one member spelt differently: recorded under the real header's name */
  km_record(l, "offsetof(nvidia_p2p_dma_mapping_t, private)",
            offsetof(nvidia_p2p_dma_mapping_t, KM_PRIVATE));
  KM_MEMBER(nvidia_p2p_dma_mapping_t, pci_dev);
  KM_TYPE(enum nvidia_p2p_page_size_type);
  KM_TYPE(CUdeviceptr);
  KM_TYPE(CUdevice);
  KM_TYPE(CUcontext);
  KM_TYPE(CUstream);
  KM_TYPE(CUuuid);
  KM_MEMBER(CUuuid, bytes);
  KM_TYPE(CUDA_POINTER_ATTRIBUTE_P2P_TOKENS);
  KM_MEMBER(CUDA_POINTER_ATTRIBUTE_P2P_TOKENS, p2pToken);
  KM_MEMBER(CUDA_POINTER_ATTRIBUTE_P2P_TOKENS, vaSpaceToken);
  /* enums passed by value: C++ fixes four of them to int (cuda.h), C must agree */
  KM_TYPE(CUresult);
  KM_TYPE(CUpointer_attribute);
  KM_TYPE(CUmemorytype);
  KM_TYPE(CUdevice_attribute);
  KM_TYPE(CUflushGPUDirectRDMAWritesOptions);
  KM_TYPE(CUGPUDirectRDMAWritesOrdering);
  KM_TYPE(CUflushGPUDirectRDMAWritesTarget);
  KM_TYPE(CUflushGPUDirectRDMAWritesScope);
  KM_TYPE(CUctx_flags);
  KM_TYPE(CUstream_flags);
}

/* ---- version macros, on tables the module makes up ---- */

static int km_versions(void) {
  nvidia_p2p_page_table_t t;
  nvidia_p2p_dma_mapping_t m;
  const uint32_t pt = NVIDIA_P2P_PAGE_TABLE_VERSION, dm = NVIDIA_P2P_DMA_MAPPING_VERSION;
  memset(&t, 0, sizeof t);
  memset(&m, 0, sizeof m);
  KM_CHECK(NVIDIA_P2P_MAJOR_VERSION(pt) == 1 && NVIDIA_P2P_MINOR_VERSION(pt) == 2);
  KM_CHECK(NVIDIA_P2P_MAJOR_VERSION(dm) == 2 && NVIDIA_P2P_MINOR_VERSION(dm) == 3);
  KM_CHECK((pt & NVIDIA_P2P_MINOR_VERSION_MASK) == NVIDIA_P2P_MINOR_VERSION(pt));
  t.version = pt;
  KM_CHECK(NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE(&t));
  t.version = pt + 1; /* a newer minor version is compatible */
  KM_CHECK(NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE(&t));
  t.version = (pt & NVIDIA_P2P_MAJOR_VERSION_MASK) | 1; /* an older one is not */
  KM_CHECK(NVIDIA_P2P_MAJOR_VERSION_MATCHES(&t, pt) &&
           !NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE(&t));
  t.version = pt + 0x10000; /* nor another major version */
  KM_CHECK(!NVIDIA_P2P_MAJOR_VERSION_MATCHES(&t, pt) && !NVIDIA_P2P_VERSION_COMPATIBLE(&t, pt));
  m.version = dm;
  KM_CHECK(NVIDIA_P2P_DMA_MAPPING_VERSION_COMPATIBLE(&m));
  m.version = dm - 1;
  KM_CHECK(!NVIDIA_P2P_DMA_MAPPING_VERSION_COMPATIBLE(&m));
  return 0;
}

static uint64_t km_page_bytes(enum nvidia_p2p_page_size_type t) {
  switch (t) {
    case NVIDIA_P2P_PAGE_SIZE_4KB:
      return 4 << 10;
    case NVIDIA_P2P_PAGE_SIZE_64KB:
      return 64 << 10;
    case NVIDIA_P2P_PAGE_SIZE_128KB:
      return 128 << 10;
    case NVIDIA_P2P_PAGE_SIZE_COUNT:
      break;
  }
  return 0;
}

/* ---- user space: devices, names, contexts, memory, attributes, copies ---- */

struct km_result_name {
  CUresult value;
  const char* name;
};
#define KM_RESULT(e) \
  { e, #e }
static const struct km_result_name km_results[] = {
    KM_RESULT(CUDA_SUCCESS),
    KM_RESULT(CUDA_ERROR_INVALID_VALUE),
    KM_RESULT(CUDA_ERROR_OUT_OF_MEMORY),
    KM_RESULT(CUDA_ERROR_NOT_INITIALIZED),
    KM_RESULT(CUDA_ERROR_DEINITIALIZED),
    KM_RESULT(CUDA_ERROR_NO_DEVICE),
    KM_RESULT(CUDA_ERROR_INVALID_DEVICE),
    KM_RESULT(CUDA_ERROR_INVALID_CONTEXT),
    KM_RESULT(CUDA_ERROR_INVALID_HANDLE),
    KM_RESULT(CUDA_ERROR_NOT_FOUND),
    KM_RESULT(CUDA_ERROR_NOT_READY),
    KM_RESULT(CUDA_ERROR_ILLEGAL_ADDRESS),
    KM_RESULT(CUDA_ERROR_CONTEXT_IS_DESTROYED),
    KM_RESULT(CUDA_ERROR_NOT_PERMITTED),
    KM_RESULT(CUDA_ERROR_NOT_SUPPORTED),
    KM_RESULT(CUDA_ERROR_UNKNOWN),
};

/* Log messages name results as cuGetErrorName spells them. */
static int km_error_names(void) {
  size_t i;
  for (i = 0; i < sizeof km_results / sizeof km_results[0]; ++i) {
    const char* s = NULL;
    KM_CHECK(cuGetErrorName(km_results[i].value, &s) == CUDA_SUCCESS && s);
    KM_CHECK(strcmp(s, km_results[i].name) == 0);
  }
  return 0;
}

static int km_device(CUdevice* dev, CUuuid* uuid) {
  int version = 0, count = 0, v = -1;
  char name[64];
  size_t total = 0;
  KM_CHECK(cuDriverGetVersion(&version) == CUDA_SUCCESS && version == CUDA_VERSION);
  KM_CHECK(cuDeviceGetCount(&count) == CUDA_ERROR_NOT_INITIALIZED);
  KM_CHECK(cuInit(0) == CUDA_SUCCESS);
  KM_CHECK(cuDeviceGetCount(&count) == CUDA_SUCCESS && count >= 1);
  KM_CHECK(cuDeviceGet(dev, count) == CUDA_ERROR_INVALID_DEVICE);
  KM_CHECK(cuDeviceGet(dev, 0) == CUDA_SUCCESS && *dev == 0);
  KM_CHECK(cuDeviceGetName(name, (int)sizeof name, *dev) == CUDA_SUCCESS && name[0]);
  KM_CHECK(cuDeviceGetName(name, (int)sizeof name, CU_DEVICE_CPU) == CUDA_ERROR_INVALID_DEVICE);
  KM_CHECK(cuDeviceTotalMem(&total, *dev) == CUDA_SUCCESS && total >= KM_GPU_PAGE);
  KM_CHECK(cuDeviceGetUuid(uuid, *dev) == CUDA_SUCCESS);
  /* What the module needs (guide 4.1.2, 7.1) ... */
  KM_CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, *dev) ==
               CUDA_SUCCESS &&
           v == 1);
  KM_CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, *dev) == CUDA_SUCCESS &&
           v == 1);
  KM_CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_INTEGRATED, *dev) == CUDA_SUCCESS &&
           v == 0);
  /* ... and what it only logs: booleans, the flush options' bits, an ordering value. */
  KM_CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, *dev) == CUDA_SUCCESS &&
           (v == 0 || v == 1));
  KM_CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED,
                                *dev) == CUDA_SUCCESS &&
           (v == 0 || v == 1));
  KM_CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, *dev) == CUDA_SUCCESS &&
           (v == 0 || v == 1));
  KM_CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS,
                                *dev) == CUDA_SUCCESS);
  KM_CHECK((v & CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST) &&
           !(v & ~(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST |
                   CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_MEMOPS)));
  KM_CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING, *dev) ==
           CUDA_SUCCESS);
  KM_CHECK(v == CU_GPU_DIRECT_RDMA_WRITES_ORDERING_NONE ||
           v == CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER ||
           v == CU_GPU_DIRECT_RDMA_WRITES_ORDERING_ALL_DEVICES);
  KM_CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_INTEGRATED, CU_DEVICE_INVALID) ==
           CUDA_ERROR_INVALID_DEVICE);
  return 0;
}

static int km_context(CUdevice dev, CUcontext* ctx) {
  CUcontext cur = NULL;
  KM_CHECK(cuCtxCreate(ctx, CU_CTX_SCHED_SPIN | CU_CTX_SCHED_YIELD, dev) ==
           CUDA_ERROR_INVALID_VALUE); /* one scheduling policy at most */
  KM_CHECK(cuCtxCreate(ctx, CU_CTX_FLAGS_MASK + 1, dev) == CUDA_ERROR_INVALID_VALUE);
  KM_CHECK(cuCtxCreate(ctx,
                       CU_CTX_SCHED_AUTO | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX |
                           CU_CTX_COREDUMP_ENABLE | CU_CTX_USER_COREDUMP_ENABLE |
                           CU_CTX_SYNC_MEMOPS,
                       dev) == CUDA_SUCCESS);
  KM_CHECK(cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == *ctx);
  KM_CHECK(cuCtxSetCurrent(NULL) == CUDA_SUCCESS && cuCtxGetCurrent(&cur) == CUDA_SUCCESS &&
           cur == NULL);
  KM_CHECK(cuCtxSetCurrent(*ctx) == CUDA_SUCCESS);
  return 0;
}

/* Every pointer attribute of GPU memory `p` (2 GPU pages, of context `ctx` on `dev`). */
static int km_attributes(CUdeviceptr p, CUcontext ctx, CUdevice dev) {
  CUcontext owner = NULL;
  unsigned int type = 0, flag = 7, one = 1;
  unsigned long long id = 0, handle_types = 7;
  int ordinal = -1;
  CUdeviceptr dptr = 0, start = 0;
  size_t range = 0;
  void* host = &host;
  CUresult r;
  KM_CHECK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, p) == CUDA_SUCCESS &&
           owner == ctx);
  KM_CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) == CUDA_SUCCESS);
  KM_CHECK(type == CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_HOST &&
           type != CU_MEMORYTYPE_ARRAY && type != CU_MEMORYTYPE_UNIFIED);
  KM_CHECK(cuPointerGetAttribute(&dptr, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, p + 8) ==
               CUDA_SUCCESS &&
           dptr == p + 8);
  KM_CHECK(cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, p) ==
           CUDA_ERROR_INVALID_VALUE); /* GPU memory is not mapped for the host (7.1) */
  KM_CHECK(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p) == CUDA_SUCCESS && id);
  KM_CHECK(cuPointerGetAttribute(&flag, CU_POINTER_ATTRIBUTE_IS_MANAGED, p) == CUDA_SUCCESS &&
           flag == 0);
  KM_CHECK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p) ==
               CUDA_SUCCESS &&
           ordinal == dev);
  KM_CHECK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p + 100) ==
               CUDA_SUCCESS &&
           start == p);
  KM_CHECK(cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p) == CUDA_SUCCESS &&
           range == 2 * KM_GPU_PAGE);
  KM_CHECK(cuPointerGetAttribute(&flag, CU_POINTER_ATTRIBUTE_MAPPED, p) == CUDA_SUCCESS &&
           flag == 1);
  KM_CHECK(cuPointerGetAttribute(&flag, CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE, p) ==
               CUDA_SUCCESS &&
           flag == 1);
  /* What driver 580 answers for cuMemAlloc memory (tests/data/cuda_probe). */
  r = cuPointerGetAttribute(&flag, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, p);
  KM_CHECK(r == CUDA_SUCCESS && flag == 1);
  r = cuPointerGetAttribute(&handle_types, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, p);
  KM_CHECK(r == CUDA_SUCCESS && handle_types == 0);
  /* SYNC_MEMOPS can be set on GPU memory, and only it can be set (7.2). */
  KM_CHECK(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p) == CUDA_SUCCESS);
  KM_CHECK(cuPointerGetAttribute(&flag, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p) == CUDA_SUCCESS &&
           flag == 1);
  KM_CHECK(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) ==
           CUDA_ERROR_INVALID_VALUE);
  {
    /* Several at once; host memory gets the defaults (how a runtime classifies pointers). */
    CUpointer_attribute which[4] = {CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    unsigned long long many_id = 0;
    void* data[4];
    data[0] = &owner;
    data[1] = &type;
    data[2] = &many_id;
    data[3] = &ordinal;
    KM_CHECK(cuPointerGetAttributes(4, which, data, p) == CUDA_SUCCESS);
    KM_CHECK(owner == ctx && type == CU_MEMORYTYPE_DEVICE && many_id == id && ordinal == dev);
    KM_CHECK(cuPointerGetAttributes(4, which, data, (CUdeviceptr)(uintptr_t)&host) == CUDA_SUCCESS);
    KM_CHECK(owner == NULL && type == 0 && many_id == 0 && ordinal == CU_DEVICE_INVALID);
  }
  return 0;
}

/* Bytes through the GPU and back, synchronously and on streams of both kinds. */
static int km_copies(CUdeviceptr p) {
  unsigned char out[256], in[256];
  CUstream blocking = NULL, async = NULL;
  size_t i;
  for (i = 0; i < sizeof out; ++i) out[i] = (unsigned char)(i * 7 + 1);
  KM_CHECK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT) == CUDA_SUCCESS);
  KM_CHECK(cuStreamCreate(&async, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  KM_CHECK(cuMemcpyHtoD(p, out, sizeof out) == CUDA_SUCCESS);
  KM_CHECK(cuMemcpyDtoD(p + KM_GPU_PAGE, p, sizeof out) == CUDA_SUCCESS);
  memset(in, 0, sizeof in);
  KM_CHECK(cuMemcpyDtoHAsync(in, p + KM_GPU_PAGE, sizeof in, async) == CUDA_SUCCESS);
  KM_CHECK(cuStreamSynchronize(async) == CUDA_SUCCESS && memcmp(in, out, sizeof in) == 0);
  for (i = 0; i < sizeof out; ++i) out[i] = (unsigned char)~out[i];
  KM_CHECK(cuMemcpyHtoDAsync(p, out, sizeof out, blocking) == CUDA_SUCCESS);
  KM_CHECK(cuMemcpyDtoDAsync(p + KM_GPU_PAGE, p, sizeof out, blocking) == CUDA_SUCCESS);
  KM_CHECK(cuStreamSynchronize(blocking) == CUDA_SUCCESS && cuCtxSynchronize() == CUDA_SUCCESS);
  KM_CHECK(cuMemcpyDtoH(in, p + KM_GPU_PAGE, sizeof in) == CUDA_SUCCESS &&
           memcmp(in, out, sizeof in) == 0);
  KM_CHECK(cuStreamDestroy(async) == CUDA_SUCCESS && cuStreamDestroy(blocking) == CUDA_SUCCESS);
  KM_CHECK(cuStreamSynchronize(async) == CUDA_ERROR_INVALID_HANDLE);
  KM_CHECK(cuFlushGPUDirectRDMAWrites(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
                                      CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER) == CUDA_SUCCESS);
  KM_CHECK(cuFlushGPUDirectRDMAWrites(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
                                      CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES) ==
           CUDA_SUCCESS);
  return 0;
}

/* ---- the kernel half: pin, map, release; revocation; persistent pins ---- */

/* What the module keeps for one pinned region (the guide's kmd_state). */
struct km_region {
  nvidia_p2p_page_table_t* table;
  nvidia_p2p_dma_mapping_t* mapping;
  int revoked;
};

/* The guide's free_callback (6.4): no DMA is in flight here, so free at once. */
static void km_free_callback(void* data) {
  struct km_region* r = (struct km_region*)data;
  ++r->revoked;
  if (r->mapping) nvidia_p2p_free_dma_mapping(r->mapping);
  nvidia_p2p_free_page_table(r->table);
}

/* Pins `len` bytes at `va` with the allocation's tokens and maps them for `peer`, checking
 * what the page table and mapping say (guide 6.2, 7.3). */
static int km_pin(struct pci_dev* peer, const CUDA_POINTER_ATTRIBUTE_P2P_TOKENS* tokens,
                  CUdeviceptr va, uint64_t len, const CUuuid* uuid, struct km_region* r) {
  uint32_t i;
  memset(r, 0, sizeof *r);
  KM_CHECK(nvidia_p2p_get_pages(tokens->p2pToken, tokens->vaSpaceToken, va, len, &r->table,
                                km_free_callback, r) == 0);
  KM_CHECK(NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE(r->table));
  KM_CHECK(km_page_bytes((enum nvidia_p2p_page_size_type)r->table->page_size) == KM_GPU_PAGE);
  KM_CHECK(r->table->entries == len / KM_GPU_PAGE);
  KM_CHECK(memcmp(r->table->gpu_uuid, uuid->bytes, NVIDIA_P2P_GPU_UUID_LEN) == 0);
  for (i = 0; i < r->table->entries; ++i)
    KM_CHECK(r->table->pages[i]->physical_address % KM_GPU_PAGE == 0);
  KM_CHECK(nvidia_p2p_dma_map_pages(peer, r->table, &r->mapping) == 0);
  KM_CHECK(NVIDIA_P2P_DMA_MAPPING_VERSION_COMPATIBLE(r->mapping));
  KM_CHECK(r->mapping->page_size_type == NVIDIA_P2P_PAGE_SIZE_64KB);
  KM_CHECK(r->mapping->entries == r->table->entries && r->mapping->pci_dev == peer);
  for (i = 0; i < r->mapping->entries; ++i) /* the peer has no IOMMU: bus = BAR1 address */
    KM_CHECK(r->mapping->dma_addresses[i] == r->table->pages[i]->physical_address);
  return 0;
}

static int km_kernel(struct pci_dev* peer, CUdeviceptr p, const CUuuid* uuid) {
  CUDA_POINTER_ATTRIBUTE_P2P_TOKENS tokens;
  struct km_region region;
  nvidia_p2p_page_table_t* persistent = NULL;
  nvidia_p2p_page_table_t* refused = NULL;
  CUdeviceptr q = 0;
  unsigned long long id = 0;
  memset(&tokens, 0, sizeof tokens);
  KM_CHECK(cuPointerGetAttribute(&tokens, CU_POINTER_ATTRIBUTE_P2P_TOKENS, p) == CUDA_SUCCESS);
  KM_CHECK(tokens.vaSpaceToken != 0); /* p2pToken is 0 on driver 580 (tests/data/cuda_probe) */
  /* The NVIDIA driver wants 64 KiB alignment (6.2). */
  KM_CHECK(nvidia_p2p_get_pages(tokens.p2pToken, tokens.vaSpaceToken, p + 4096, KM_GPU_PAGE,
                                &refused, km_free_callback, &region) == -EINVAL &&
           refused == NULL);
  /* Pin, map, unmap, release (6.3): no callback. */
  KM_STEP(km_pin(peer, &tokens, p, 2 * KM_GPU_PAGE, uuid, &region));
  KM_CHECK(nvidia_p2p_dma_unmap_pages(peer, region.table, region.mapping) == 0);
  KM_CHECK(nvidia_p2p_put_pages(tokens.p2pToken, tokens.vaSpaceToken, p, region.table) == 0);
  KM_CHECK(region.revoked == 0);
  /* Pin again and free the memory under the pin: the callback runs, synchronously (5.3), and
   * the buffer ID check then sees the memory gone (6.5). */
  KM_STEP(km_pin(peer, &tokens, p, 2 * KM_GPU_PAGE, uuid, &region));
  KM_CHECK(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p) == CUDA_SUCCESS);
  KM_CHECK(cuMemFree(p) == CUDA_SUCCESS && region.revoked == 1);
  KM_CHECK(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p) ==
           CUDA_ERROR_INVALID_VALUE);
  /* A persistent pin (4.2): no callback, released explicitly. */
  KM_CHECK(cuMemAlloc(&q, KM_GPU_PAGE) == CUDA_SUCCESS);
  KM_CHECK(nvidia_p2p_get_pages_persistent(q, KM_GPU_PAGE, &persistent, NVIDIA_P2P_FLAGS_DEFAULT) ==
           0);
  KM_CHECK(NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE(persistent) && persistent->entries == 1);
  KM_CHECK(nvidia_p2p_put_pages_persistent(q, persistent, NVIDIA_P2P_FLAGS_DEFAULT) == 0);
  KM_CHECK(cuMemFree(q) == CUDA_SUCCESS);
  return 0;
}

int KM_RUN(struct pci_dev* peer, struct km_layout* layout) {
  CUdevice dev = CU_DEVICE_INVALID;
  CUuuid uuid;
  CUcontext ctx = NULL, cur = NULL;
  CUdeviceptr p = 0, base = 0;
  size_t size = 0;
  km_layouts(layout);
  KM_STEP(km_versions());
  KM_STEP(km_error_names());
  KM_STEP(km_device(&dev, &uuid));
  KM_STEP(km_context(dev, &ctx));
  KM_CHECK(cuMemAlloc(&p, (size_t)1 << 62) == CUDA_ERROR_OUT_OF_MEMORY);
  KM_CHECK(cuMemAlloc(&p, 2 * KM_GPU_PAGE) == CUDA_SUCCESS && p % KM_GPU_PAGE == 0);
  KM_CHECK(cuMemGetAddressRange(&base, &size, p + 100) == CUDA_SUCCESS && base == p &&
           size == 2 * KM_GPU_PAGE);
  KM_CHECK(cuMemGetAddressRange(&base, &size, p + 2 * KM_GPU_PAGE) == CUDA_ERROR_NOT_FOUND);
  KM_STEP(km_attributes(p, ctx, dev));
  KM_STEP(km_copies(p));
  KM_STEP(km_kernel(peer, p, &uuid)); /* frees p */
  KM_CHECK(cuCtxDestroy(ctx) == CUDA_SUCCESS);
  KM_CHECK(cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == NULL);
  KM_CHECK(cuCtxSetCurrent(ctx) == CUDA_ERROR_INVALID_CONTEXT);
  KM_CHECK(cuMemAlloc(&p, KM_GPU_PAGE) == CUDA_ERROR_INVALID_CONTEXT);
  return 0;
}
