// kernel_module.c compiled as C++, under the name km_run_cxx: nv-p2p.h and cuda.h must work
// from C++ as they do from C, with the same layouts (the test compares them).
#define KM_RUN km_run_cxx
#include "tests/c_headers/kernel_module.c"
