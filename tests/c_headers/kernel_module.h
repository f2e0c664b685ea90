/*
 * The entry points of kernel_module.c: the same source compiled once as C (gnu11) and once as
 * C++ (kernel_module_cxx.cpp), each under its own name. Each runs the module against the
 * installed NVIDIA driver model and returns 0, or the line of kernel_module.c whose check
 * failed; it also reports the sizes and offsets it saw, so that the two languages' layouts can
 * be compared.
 */
#ifndef P2PSIM_TESTS_C_HEADERS_KERNEL_MODULE_H_
#define P2PSIM_TESTS_C_HEADERS_KERNEL_MODULE_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct pci_dev;

enum { KM_LAYOUT_MAX = 96 };

struct km_layout {
  int count;
  const char* what[KM_LAYOUT_MAX]; /* the expression, e.g. "sizeof(nvidia_p2p_page_t)" */
  size_t value[KM_LAYOUT_MAX];
};

int km_run_c(struct pci_dev* peer, struct km_layout* layout);
int km_run_cxx(struct pci_dev* peer, struct km_layout* layout);

#ifdef __cplusplus
}
#endif

#endif /* P2PSIM_TESTS_C_HEADERS_KERNEL_MODULE_H_ */
