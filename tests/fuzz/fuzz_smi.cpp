// libFuzzer target: `nvidia-smi topo -m` text, through the importer (which loads what it
// builds to check it), then the topology it writes through the topology loader again.
#include "sim/config/error.h"
#include "sim/config/reader.h"
#include "sim/topology/smi_import.h"
#include "sim/topology/topology_loader.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace p2psim;
  const std::string platforms = (fuzz::source_dir() / "topologies" / "platforms").string();
  try {
    auto r = topo::import_smi_matrix(std::string_view(reinterpret_cast<const char*>(data), size),
                                     "input.txt", {{platforms}, "skylake_sp"});
    auto doc =
        config::document::parse(r.yaml, (fuzz::source_dir() / "topologies" / "smi.yaml").string());
    topo::load_topology(doc);
  } catch (const config::error&) {
  }
  return 0;
}
