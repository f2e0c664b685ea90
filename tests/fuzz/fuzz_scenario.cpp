// libFuzzer target: scenario YAML, through the loader, then each topology it names and the
// checks of its program against that topology.
#include "sim/config/error.h"
#include "sim/core/program.h"
#include "sim/core/scenario.h"
#include "sim/topology/topology_loader.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace p2psim;
  try {
    core::scenario s = core::load_scenario(fuzz::write_input(data, size), {});
    for (const auto& path : s.topologies) {
      topo::load_options opt;
      opt.platform_dirs = {(fuzz::source_dir() / "topologies" / "platforms").string()};
      core::check_program(s.program, topo::load_topology(path, opt));
    }
  } catch (const config::error&) {
  }
  return 0;
}
