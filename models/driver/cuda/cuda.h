/*
 * cuda.h: the subset of NVIDIA's CUDA driver API that GPUDirect RDMA software uses (guide
 * 13.3, 5.6-5.7, 6.2, 6.5, 7.1-7.2), with the real names and numeric values, so that user-space
 * code written for the real header compiles against this one and runs against p2psim's model
 * of the NVIDIA driver. Each simulated process (kernel::current_pid()) has its own CUDA state.
 * Values were checked against the CUDA Driver API reference (see README.md in this folder).
 * It compiles as C (C11 / gnu11) and as C++; only four enums' underlying type differs (below).
 */
#ifndef P2PSIM_CUDA_H_
#define P2PSIM_CUDA_H_

#include <stddef.h>

/* The API level modelled: CUDA 12.2, where the persistent nv-p2p API appeared (guide 4.2) and
 * cuCtxCreate still has its classic (CUcontext*, flags, CUdevice) form. */
#define CUDA_VERSION 12020

/* The enums an application passes in (attributes, flush target and scope) may hold any int:
 * the driver answers CUDA_ERROR_INVALID_VALUE to a value it does not know. In C that is
 * well-defined: an enum holds every value of its integer type. In C++ an enum without a fixed
 * underlying type holds only the values of the smallest bit-field that fits its enumerators
 * (0-15 for CUpointer_attribute): loading 999 from one is undefined, and UBSan reports it. So
 * these enums get `: int` in C++, a form C11 lacks. (Real cuda.h's `..._MAX = 0x7FFFFFFF`
 * enumerators only fix an enum's size: in C++ they would leave negative values out of range.) */
#ifdef __cplusplus
#define P2PSIM_CU_ANY_INT : int
#else
#define P2PSIM_CU_ANY_INT
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef unsigned long long CUdeviceptr;
typedef int CUdevice;
typedef struct CUctx_st* CUcontext;
typedef struct CUstream_st* CUstream;
typedef struct CUuuid_st {
  char bytes[16];
} CUuuid;

#define CU_DEVICE_CPU ((CUdevice)-1)
#define CU_DEVICE_INVALID ((CUdevice)-2)

typedef enum cudaError_enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
  CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705,
  CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
  CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
  CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
  CUDA_ERROR_NOT_PERMITTED = 800,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_UNKNOWN = 999
} CUresult;

typedef enum CUpointer_attribute_enum P2PSIM_CU_ANY_INT {
  CU_POINTER_ATTRIBUTE_CONTEXT = 1,                     /* CUcontext */
  CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,                 /* unsigned int (CUmemorytype) */
  CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3,              /* CUdeviceptr */
  CU_POINTER_ATTRIBUTE_HOST_POINTER = 4,                /* void* */
  CU_POINTER_ATTRIBUTE_P2P_TOKENS = 5,                  /* CUDA_POINTER_ATTRIBUTE_P2P_TOKENS */
  CU_POINTER_ATTRIBUTE_SYNC_MEMOPS = 6,                 /* unsigned int (boolean) */
  CU_POINTER_ATTRIBUTE_BUFFER_ID = 7,                   /* unsigned long long */
  CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,                  /* unsigned int (boolean) */
  CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,              /* int */
  CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE = 10, /* unsigned int (boolean) */
  CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,           /* CUdeviceptr */
  CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,                 /* size_t */
  CU_POINTER_ATTRIBUTE_MAPPED = 13,                     /* unsigned int (boolean) */
  CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES = 14,       /* unsigned long long (handle types) */
  CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE = 15, /* unsigned int (boolean) */
  CU_POINTER_ATTRIBUTE_ACCESS_FLAGS = 16,               /* unsigned int (below) */
  CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE = 17,             /* void*: no pools, NULL */
  CU_POINTER_ATTRIBUTE_MAPPING_SIZE = 18,               /* size_t */
  CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR = 19,          /* void* */
  CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID = 20,            /* unsigned long long */
  CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE = 21    /* unsigned int (boolean) */
} CUpointer_attribute;

/* Values of CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: what the GPUs may do with the memory. */
typedef enum CUDA_POINTER_ATTRIBUTE_ACCESS_FLAGS_enum {
  CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE = 0x0,
  CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READ = 0x1,
  CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE = 0x3
} CUDA_POINTER_ATTRIBUTE_ACCESS_FLAGS;

typedef enum CUmemorytype_enum {
  CU_MEMORYTYPE_HOST = 1,
  CU_MEMORYTYPE_DEVICE = 2,
  CU_MEMORYTYPE_ARRAY = 3,
  CU_MEMORYTYPE_UNIFIED = 4
} CUmemorytype;

/* The attributes cuDeviceGetAttribute answers; any other value is CUDA_ERROR_INVALID_VALUE. */
typedef enum CUdevice_attribute_enum P2PSIM_CU_ANY_INT {
  CU_DEVICE_ATTRIBUTE_INTEGRATED = 18,
  CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 19,
  CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
  CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 83,
  CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS = 88,
  CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM = 91,
  CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES = 98,
  CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED = 99,
  CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES = 100,
  CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
  CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103,
  CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED = 104,
  CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED = 105,
  CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED = 107,
  CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED = 110,
  CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED = 112,
  CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED = 113,
  CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
  CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED = 116,
  CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS = 117,
  CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING = 118,
  CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES = 119,
  CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED = 121,
  CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 124,
  CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED = 125,
  CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED = 128,
  CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED = 132,
  CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 141,
  CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 145,
  CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED = 146
} CUdevice_attribute;

/* What cuDeviceGetP2PAttribute answers about the link between two devices. */
typedef enum CUdevice_P2PAttribute_enum P2PSIM_CU_ANY_INT {
  CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK = 1,
  CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED = 2,
  CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED = 3,
  CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED = 4
} CUdevice_P2PAttribute;

/* Bits of CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS. */
typedef enum CUflushGPUDirectRDMAWritesOptions_enum {
  CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST = 1 << 0,
  CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_MEMOPS = 1 << 1
} CUflushGPUDirectRDMAWritesOptions;

/* Values of CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING. */
typedef enum CUGPUDirectRDMAWritesOrdering_enum {
  CU_GPU_DIRECT_RDMA_WRITES_ORDERING_NONE = 0,
  CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER = 100,
  CU_GPU_DIRECT_RDMA_WRITES_ORDERING_ALL_DEVICES = 200
} CUGPUDirectRDMAWritesOrdering;

/* cuFlushGPUDirectRDMAWrites' target and scope; a scope compares with the ordering values. */
typedef enum CUflushGPUDirectRDMAWritesTarget_enum P2PSIM_CU_ANY_INT {
  CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX = 0
} CUflushGPUDirectRDMAWritesTarget;

typedef enum CUflushGPUDirectRDMAWritesScope_enum P2PSIM_CU_ANY_INT {
  CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER = 100,
  CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES = 200
} CUflushGPUDirectRDMAWritesScope;

typedef enum CUctx_flags_enum {
  CU_CTX_SCHED_AUTO = 0x00,
  CU_CTX_SCHED_SPIN = 0x01,
  CU_CTX_SCHED_YIELD = 0x02,
  CU_CTX_SCHED_BLOCKING_SYNC = 0x04,
  CU_CTX_SCHED_MASK = 0x07,
  CU_CTX_MAP_HOST = 0x08,
  CU_CTX_LMEM_RESIZE_TO_MAX = 0x10,
  CU_CTX_COREDUMP_ENABLE = 0x20,
  CU_CTX_USER_COREDUMP_ENABLE = 0x40,
  CU_CTX_SYNC_MEMOPS = 0x80, /* every synchronous copy in the context synchronizes (5.7) */
  CU_CTX_FLAGS_MASK = 0xFF
} CUctx_flags;

typedef enum CUstream_flags_enum {
  CU_STREAM_DEFAULT = 0x0,
  CU_STREAM_NON_BLOCKING = 0x1
} CUstream_flags;

/* cuMemHostAlloc's flags. */
#define CU_MEMHOSTALLOC_PORTABLE 0x01      /* pinned for every context, not only the current */
#define CU_MEMHOSTALLOC_DEVICEMAP 0x02     /* mapped into the GPUs' address space */
#define CU_MEMHOSTALLOC_WRITECOMBINED 0x04 /* write-combined: fast for the GPU, slow CPU reads */

/* cuMemHostRegister's flags. */
#define CU_MEMHOSTREGISTER_PORTABLE 0x01
#define CU_MEMHOSTREGISTER_DEVICEMAP 0x02
#define CU_MEMHOSTREGISTER_IOMEMORY 0x04 /* the range is a device's MMIO, not memory */
#define CU_MEMHOSTREGISTER_READ_ONLY 0x08

/* What cuMemGetHandleForAddressRange makes of a range of device memory (guide 4.1: the
 * upstream Linux path, a dma-buf file descriptor), and its flags. */
typedef enum CUmemRangeHandleType_enum P2PSIM_CU_ANY_INT {
  CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 0x1
} CUmemRangeHandleType;
typedef enum CUmemRangeFlags_enum {
  CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE = 0x1 /* BAR1 mappings only: not supported */
} CUmemRangeFlags;

/* ---- virtual memory management (the reserve-then-map scheme NCCL and UCX use) ---- */
typedef unsigned long long CUmemGenericAllocationHandle;
typedef enum CUmemAllocationHandleType_enum P2PSIM_CU_ANY_INT {
  CU_MEM_HANDLE_TYPE_NONE = 0x0,
  CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1, /* an int file descriptor */
  CU_MEM_HANDLE_TYPE_WIN32 = 0x2,
  CU_MEM_HANDLE_TYPE_WIN32_KMT = 0x4,
  CU_MEM_HANDLE_TYPE_FABRIC = 0x8 /* needs an IMEX channel: not modelled */
} CUmemAllocationHandleType;
typedef enum CUmemAccess_flags_enum P2PSIM_CU_ANY_INT {
  CU_MEM_ACCESS_FLAGS_PROT_NONE = 0x0,
  CU_MEM_ACCESS_FLAGS_PROT_READ = 0x1,
  CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3
} CUmemAccess_flags;
typedef enum CUmemLocationType_enum P2PSIM_CU_ANY_INT {
  CU_MEM_LOCATION_TYPE_INVALID = 0x0,
  CU_MEM_LOCATION_TYPE_DEVICE = 0x1,
  CU_MEM_LOCATION_TYPE_HOST = 0x2,
  CU_MEM_LOCATION_TYPE_HOST_NUMA = 0x3,
  CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT = 0x4
} CUmemLocationType;
typedef enum CUmemAllocationType_enum P2PSIM_CU_ANY_INT {
  CU_MEM_ALLOCATION_TYPE_INVALID = 0x0,
  CU_MEM_ALLOCATION_TYPE_PINNED = 0x1,
  CU_MEM_ALLOCATION_TYPE_MANAGED = 0x2 /* CUDA 13; cuMemCreate refuses it */
} CUmemAllocationType;
typedef enum CUmemAllocationGranularity_flags_enum P2PSIM_CU_ANY_INT {
  CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0x0,
  CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 0x1
} CUmemAllocationGranularity_flags;
typedef enum CUmemAllocationCompType_enum {
  CU_MEM_ALLOCATION_COMP_NONE = 0x0,
  CU_MEM_ALLOCATION_COMP_GENERIC = 0x1
} CUmemAllocationCompType;
typedef struct CUmemLocation_st {
  CUmemLocationType type;
  int id; /* a device ordinal, or a NUMA node for HOST_NUMA */
} CUmemLocation;
typedef struct CUmemAllocationProp_st {
  CUmemAllocationType type;
  CUmemAllocationHandleType requestedHandleTypes;
  CUmemLocation location;
  void* win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
} CUmemAllocationProp;
typedef struct CUmemAccessDesc_st {
  CUmemLocation location;
  CUmemAccess_flags flags;
} CUmemAccessDesc;

/* Guide 7.2. */
typedef struct CUDA_POINTER_ATTRIBUTE_P2P_TOKENS_st {
  unsigned long long p2pToken;
  unsigned int vaSpaceToken;
} CUDA_POINTER_ATTRIBUTE_P2P_TOKENS;

/* ---- initialization, version, devices ---- */
CUresult cuInit(unsigned int Flags);
CUresult cuDriverGetVersion(int* driverVersion); /* works before cuInit */
CUresult cuDeviceGetCount(int* count);
CUresult cuDeviceGet(CUdevice* device, int ordinal);
CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev);
CUresult cuDeviceGetName(char* name, int len, CUdevice dev);
CUresult cuDeviceTotalMem(size_t* bytes, CUdevice dev);
CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev); /* = nvidia_p2p_page_table.gpu_uuid */
/* Blocks until RDMA writes landed so far are visible to `scope` (a no-op when the device's
 * CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING already covers it). */
CUresult cuFlushGPUDirectRDMAWrites(CUflushGPUDirectRDMAWritesTarget target,
                                    CUflushGPUDirectRDMAWritesScope scope);
CUresult cuGetErrorName(CUresult error, const char** pStr);

/* ---- contexts (a stack per process; cuCtxCreate pushes) ---- */
CUresult cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxDestroy(CUcontext ctx); /* frees its memory, revoking pins (guide 5.3) */
CUresult cuCtxGetCurrent(CUcontext* pctx);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuCtxPushCurrent(CUcontext ctx);
CUresult cuCtxPopCurrent(CUcontext* pctx);
CUresult cuCtxSynchronize(void);

/* ---- memory ---- */
CUresult cuMemAlloc(CUdeviceptr* dptr, size_t bytesize);
CUresult cuMemFree(CUdeviceptr dptr); /* runs nv-p2p free callbacks first (guide 5.3) */
CUresult cuMemGetAddressRange(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr);
CUresult cuMemGetInfo(size_t* free, size_t* total);  /* of the current context's device */
CUresult cuMemAllocHost(void** pp, size_t bytesize); /* page-locked; needs no context */
CUresult cuMemFreeHost(void* p);

/* ---- page-locked host memory (the guide's chapter 2 path: a peer's DMA lands in it) ---- */
CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags);
CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags);
CUresult cuMemHostUnregister(void* p);
CUresult cuMemHostGetDevicePointer(CUdeviceptr* pdptr, void* p, unsigned int Flags);
CUresult cuMemHostGetFlags(unsigned int* pFlags, void* p);

/* ---- pointer attributes (guide 7.2) ---- */
CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr);
CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute* attributes,
                                void** data, CUdeviceptr ptr);
CUresult cuPointerSetAttribute(const void* value, CUpointer_attribute attribute, CUdeviceptr ptr);

/* ---- dma-buf export (guide 4.1): `handle` is an int*, the descriptor; a third-party
 * driver imports it with dma_buf_get. An open descriptor keeps the memory of every
 * allocation the range touches alive, past cuMemFree and cuCtxDestroy. ---- */
CUresult cuMemGetHandleForAddressRange(void* handle, CUdeviceptr dptr, size_t size,
                                       CUmemRangeHandleType handleType, unsigned long long flags);

/* ---- CUDA IPC: a process exports a cuMemAlloc allocation as 64 opaque bytes, another process
 * on the machine maps it (docs/driver-model.md, "CUDA IPC"). ---- */
#define CU_IPC_HANDLE_SIZE 64
typedef struct CUipcMemHandle_st {
  char reserved[CU_IPC_HANDLE_SIZE];
} CUipcMemHandle;
typedef enum CUipcMem_flags_enum P2PSIM_CU_ANY_INT {
  CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 0x1
} CUipcMem_flags;
CUresult cuIpcGetMemHandle(CUipcMemHandle* pHandle, CUdeviceptr dptr);
CUresult cuIpcOpenMemHandle(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags);
CUresult cuIpcCloseMemHandle(CUdeviceptr dptr);

/* ---- virtual memory management: physical memory (cuMemCreate) is mapped at VA a process
 * reserved (cuMemAddressReserve); neither belongs to a context (docs/driver-model.md, "VMM").
 * ---- */
CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                       CUmemAllocationGranularity_flags option);
CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags);
CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size);
CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                     const CUmemAllocationProp* prop, unsigned long long flags);
CUresult cuMemRelease(CUmemGenericAllocationHandle handle);
CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags);
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size);
CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count);
CUresult cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr);
CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr);
CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                CUmemGenericAllocationHandle handle);
CUresult cuMemExportToShareableHandle(void* shareableHandle, CUmemGenericAllocationHandle handle,
                                      CUmemAllocationHandleType handleType,
                                      unsigned long long flags);
CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* osHandle,
                                        CUmemAllocationHandleType shHandleType);
/* Sets N bytes of device memory to uc, once the context's earlier work is done. */
CUresult cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N);
/* No primary context is modelled: every device's is inactive, flags 0. */
CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active);

/* ---- copies and streams ---- */
CUresult cuMemcpyHtoD(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount);
CUresult cuMemcpyDtoH(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                           CUstream hStream);
CUresult cuMemcpyDtoHAsync(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                           CUstream hStream);
CUresult cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                           CUstream hStream);
CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags);
CUresult cuStreamDestroy(CUstream hStream);
CUresult cuStreamSynchronize(CUstream hStream);

/* ---- peer access: whether a GPU may reach another's memory over the fabric ---- */
CUresult cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev);
CUresult cuDeviceGetP2PAttribute(int* value, CUdevice_P2PAttribute attrib, CUdevice srcDevice,
                                 CUdevice dstDevice);
CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags);
CUresult cuCtxDisablePeerAccess(CUcontext peerContext);
/* Copies between GPUs (UVA: the contexts only need to be given; a current one must exist). */
CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                      CUcontext srcContext, size_t ByteCount);
CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                           CUcontext srcContext, size_t ByteCount, CUstream hStream);

#ifdef __cplusplus
}
#endif

#undef P2PSIM_CU_ANY_INT

#endif /* P2PSIM_CUDA_H_ */
