// libFuzzer target: litmus test YAML, through the litmus loader.
#include "sim/config/error.h"
#include "sim/litmus/litmus_spec.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace p2psim;
  try {
    litmus::load_litmus(fuzz::write_input(data, size));
  } catch (const config::error&) {
  }
  return 0;
}
