// nv-p2p.h and cuda.h from C: kernel_module.c, a kernel module that uses every type, value
// and macro of both headers, is built once as C (gnu11) and once as C++, and each build runs
// against the NVIDIA driver model. Both must pass all their checks and see the same layouts.
#include <catch2/catch.hpp>

#include <string>

#include "models/driver/kernel/kernel.h"
#include "tests/c_headers/kernel_module.h"
#include "tests/conformance/fixture.h"

using namespace p2psim;

namespace {

using km_entry = int (*)(pci_dev*, km_layout*);

// Runs one build of the module in a world of its own (a fresh driver: CUDA state starts over)
// and checks that its calls reached the driver: three pins, one of them persistent, two
// released, one revoked by cuMemFree, and none left.
km_layout run_module(km_entry run, const char* language) {
  test::world w;
  pci_dev nic{"nic0", 0x0400, nullptr};  // no IOMMU: DMA addresses are BAR1 addresses
  km_layout layout{};
  const int failed_line = run(&nic, &layout);
  INFO(language << " build: the check at kernel_module.c:" << failed_line << " failed");
  CHECK(failed_line == 0);
  const nv::driver_counters& c = w.driver().counters();
  CHECK(c.pins == 3);
  CHECK(c.persistent_pins == 1);
  CHECK(c.unpins == 2);
  CHECK(c.callbacks == 1);
  CHECK(c.refused == 1);  // the unaligned get_pages
  CHECK(c.misuse == 0);
  CHECK(w.driver().live_pins() == 0);
  return layout;
}

}  // namespace

TEST_CASE("C headers: a kernel module built as C (gnu11) runs against the driver model",
          "[c_headers]") {
  km_layout l = run_module(km_run_c, "C");
  CHECK(l.count > 0);
  CHECK(l.count <= KM_LAYOUT_MAX);
}

TEST_CASE("C headers: the same kernel module built as C++ runs against the driver model",
          "[c_headers]") {
  km_layout l = run_module(km_run_cxx, "C++");
  CHECK(l.count > 0);
  CHECK(l.count <= KM_LAYOUT_MAX);
}

TEST_CASE("C headers: C and C++ see the same size, alignment and offsets of every type",
          "[c_headers]") {
  const km_layout c = run_module(km_run_c, "C");
  const km_layout cxx = run_module(km_run_cxx, "C++");
  REQUIRE(c.count <= KM_LAYOUT_MAX);
  REQUIRE(c.count == cxx.count);
  for (int i = 0; i < c.count; ++i) {
    const std::string what = c.what[i];
    INFO(what);
    CHECK(what == cxx.what[i]);
    CHECK(c.value[i] == cxx.value[i]);
  }
  // The enums passed by value are int-sized in both, as the real ABI has them.
  for (int i = 0; i < c.count; ++i)
    if (std::string(c.what[i]) == "sizeof(CUpointer_attribute)") CHECK(c.value[i] == sizeof(int));
}
