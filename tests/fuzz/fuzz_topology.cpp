// libFuzzer target: topology YAML, through the loader, the graph checks and the address map.
#include "sim/config/error.h"
#include "sim/config/reader.h"
#include "sim/topology/address_map.h"
#include "sim/topology/topology_loader.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace p2psim;
  try {
    auto doc = config::document::parse(std::string(reinterpret_cast<const char*>(data), size),
                                       (fuzz::source_dir() / "topologies" / "input.yaml").string());
    topo::topology t = topo::load_topology(doc);
    topo::enumerate(t);
  } catch (const config::error&) {
  }
  return 0;
}
