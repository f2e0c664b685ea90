// libFuzzer target: the driver property test's commands (tests/driver_ref), decoded from the
// input 16 bytes a command, run against the driver models and the reference model. The first
// byte picks the world: shared or private BAR1 pages, two GPUs or one with little VRAM and
// BAR1. A divergence, a crash or a sanitizer report is a finding.
#include <cstdio>
#include <cstdlib>

#include "tests/driver_ref/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace p2psim::driver_ref;
  if (size < 1) return 0;
  harness_config config;
  switch (data[0] % 3) {
    case 1:
      config.ref.share_bar1 = false;  // a BAR1 page per pin (guide 4.8)
      break;
    case 2:  // VRAM and BAR1 run out often (5.5)
      config.ref.gpus = 1;
      config.ref.frames = 24;
      config.ref.bar1_pages = 48;
      config.ref.bar1_reserved = 40;
      break;
    default:
      break;
  }
  const auto commands = decode(data + 1, size - 1);
  try {
    harness h(config);
    h.run_all(commands);
  } catch (const divergence& d) {
    std::fprintf(stderr, "%s\nsequence:\n%s", d.what(), describe(commands).c_str());
    std::abort();
  }
  return 0;
}
