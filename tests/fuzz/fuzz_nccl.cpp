// libFuzzer target: NCCL topology XML, through the importer, then the topology it writes
// through the topology loader.
#include "sim/config/error.h"
#include "sim/config/reader.h"
#include "sim/topology/nccl_import.h"
#include "sim/topology/topology_loader.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace p2psim;
  const std::string platforms = (fuzz::source_dir() / "topologies" / "platforms").string();
  try {
    auto r = topo::import_nccl_xml(std::string_view(reinterpret_cast<const char*>(data), size),
                                   "input.xml", {{platforms}});
    auto doc =
        config::document::parse(r.yaml, (fuzz::source_dir() / "topologies" / "nccl.yaml").string());
    topo::load_topology(doc);
  } catch (const config::error&) {
  }
  return 0;
}
