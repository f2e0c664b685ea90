/*
 * nv-p2p.h: the NVIDIA peer-to-peer kernel API, as documented in "Developing a Linux Kernel
 * Module using GPUDirect RDMA" (13.3), 7.3 Kernel API, and its change log (4.2 persistent
 * API, 4.6 DMA mapping API and version macros). Driver code written for the real header
 * compiles against this one and runs against p2psim's model of the NVIDIA driver.
 *
 * A C header (gnu11, as a kernel module is built) that C++ can include too. The one difference:
 * nvidia_p2p_dma_mapping's opaque member is `private` in C, as in the real header, and
 * `private_data` in C++, where `private` is a keyword. `struct pci_dev` is only declared here;
 * the models' definition is in models/driver/kernel/kernel.h (C++).
 */
#ifndef P2PSIM_NV_P2P_H_
#define P2PSIM_NV_P2P_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct pci_dev;

/* Structure versions: major in the upper 16 bits, minor in the lower 16. */
#define NVIDIA_P2P_MAJOR_VERSION_MASK 0xffff0000
#define NVIDIA_P2P_MINOR_VERSION_MASK 0x0000ffff
#define NVIDIA_P2P_MAJOR_VERSION(v) (((v)&NVIDIA_P2P_MAJOR_VERSION_MASK) >> 16)
#define NVIDIA_P2P_MINOR_VERSION(v) ((v)&NVIDIA_P2P_MINOR_VERSION_MASK)
#define NVIDIA_P2P_MAJOR_VERSION_MATCHES(p, v) \
  (NVIDIA_P2P_MAJOR_VERSION((p)->version) == NVIDIA_P2P_MAJOR_VERSION(v))
#define NVIDIA_P2P_VERSION_COMPATIBLE(p, v)                                 \
  (NVIDIA_P2P_MAJOR_VERSION((p)->version) == NVIDIA_P2P_MAJOR_VERSION(v) && \
   NVIDIA_P2P_MINOR_VERSION((p)->version) >= NVIDIA_P2P_MINOR_VERSION(v))

#define NVIDIA_P2P_GPU_UUID_LEN 16

/* The persistent API of CUDA 12.2 / R535 (guide 4.2) is available. */
#define NVIDIA_P2P_CAP_GET_PAGES_PERSISTENT_API
#define NVIDIA_P2P_FLAGS_DEFAULT 0

enum nvidia_p2p_page_size_type {
  NVIDIA_P2P_PAGE_SIZE_4KB = 0,
  NVIDIA_P2P_PAGE_SIZE_64KB,
  NVIDIA_P2P_PAGE_SIZE_128KB,
  NVIDIA_P2P_PAGE_SIZE_COUNT
};

typedef struct nvidia_p2p_page {
  uint64_t physical_address; /* the only field relevant to GPUDirect RDMA (7.3) */
  union nvidia_p2p_request_registers {
    struct {
      uint32_t wreqmb_h;
      uint32_t rreqmb_h;
      uint32_t rreqmb_0;
      uint32_t reserved[3];
    } fermi;
  } registers;
} nvidia_p2p_page_t;

#define NVIDIA_P2P_PAGE_TABLE_VERSION 0x00010002
#define NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE(p) \
  NVIDIA_P2P_VERSION_COMPATIBLE(p, NVIDIA_P2P_PAGE_TABLE_VERSION)

typedef struct nvidia_p2p_page_table {
  uint32_t version;
  uint32_t page_size; /* enum nvidia_p2p_page_size_type */
  struct nvidia_p2p_page** pages;
  uint32_t entries;
  uint8_t* gpu_uuid; /* added in CUDA 8.0 (minor version 2) */
} nvidia_p2p_page_table_t;

#define NVIDIA_P2P_DMA_MAPPING_VERSION 0x00020003
#define NVIDIA_P2P_DMA_MAPPING_VERSION_COMPATIBLE(p) \
  NVIDIA_P2P_VERSION_COMPATIBLE(p, NVIDIA_P2P_DMA_MAPPING_VERSION)

typedef struct nvidia_p2p_dma_mapping {
  uint32_t version;
  enum nvidia_p2p_page_size_type page_size_type;
  uint32_t entries;
  uint64_t* dma_addresses;
#ifdef __cplusplus
  void* private_data; /* `private` is a keyword in C++ */
#else
  void* private; /* the real header's name */
#endif
  struct pci_dev* pci_dev;
} nvidia_p2p_dma_mapping_t;

/* Pins the GPU pages under [virtual_address, virtual_address + length) for a third-party
 * device. Address and length 64 KiB aligned, length non-zero, free_callback non-NULL (R535).
 * 0, or -EINVAL, -EPERM, -ENOMEM, -ENOTSUPP, -EIO. */
int nvidia_p2p_get_pages(uint64_t p2p_token, uint32_t va_space_token, uint64_t virtual_address,
                         uint64_t length, struct nvidia_p2p_page_table** page_table,
                         void (*free_callback)(void* data), void* data);

/* Releases pages pinned by nvidia_p2p_get_pages; not from inside its free callback, and from
 * the process that pinned them (guide 6.3). */
int nvidia_p2p_put_pages(uint64_t p2p_token, uint32_t va_space_token, uint64_t virtual_address,
                         struct nvidia_p2p_page_table* page_table);

/* Frees a page table: what a free callback must call (guide 5.3, 6.4). */
int nvidia_p2p_free_page_table(struct nvidia_p2p_page_table* page_table);

/* Persistent mappings (CUDA 12.2): no callback, never revoked; released explicitly. */
int nvidia_p2p_get_pages_persistent(uint64_t virtual_address, uint64_t length,
                                    struct nvidia_p2p_page_table** page_table, uint32_t flags);
int nvidia_p2p_put_pages_persistent(uint64_t virtual_address,
                                    struct nvidia_p2p_page_table* page_table, uint32_t flags);

/* Bus addresses of the pinned pages for `peer`: BAR1 physical addresses when its IOMMU is
 * off or in pass-through, I/O virtual addresses when it translates. */
int nvidia_p2p_dma_map_pages(struct pci_dev* peer, struct nvidia_p2p_page_table* page_table,
                             struct nvidia_p2p_dma_mapping** dma_mapping);
int nvidia_p2p_dma_unmap_pages(struct pci_dev* peer, struct nvidia_p2p_page_table* page_table,
                               struct nvidia_p2p_dma_mapping* dma_mapping);
/* Frees a DMA mapping from inside the free callback. */
int nvidia_p2p_free_dma_mapping(struct nvidia_p2p_dma_mapping* dma_mapping);

#ifdef __cplusplus
}
#endif

#endif /* P2PSIM_NV_P2P_H_ */
