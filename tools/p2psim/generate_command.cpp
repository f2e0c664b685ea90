// p2psim generate: random valid machines and workloads (sim/generate), a topology file and a
// scenario file per seed, for trying p2psim on machines nobody hand-picked and for the
// differential tests (docs/testing.md, "Generated machines").
#include <iostream>

#include "sim/config/error.h"
#include "sim/generate/generate.h"
#include "tools/p2psim/commands.h"

namespace p2psim::cli {

void add_generate(CLI::App& app, generate_args& a) {
  auto* c = app.add_subcommand(
      "generate",
      "Write random valid machines (topology files) and workloads (scenario files): "
      "DIR/gen-SEED.topology.yaml and DIR/gen-SEED.yaml for seeds SEED .. SEED+COUNT-1");
  c->add_option("--seed", a.seed, "The first seed (default 1)")->check(CLI::NonNegativeNumber);
  c->add_option("--count", a.count, "How many cases (default 1)")->check(CLI::Range(1, 1000000));
  c->add_option("-o,--output", a.output, "The folder to write them to (default: .)");
}

int generate_command(const generate_args& a) {
  const auto platforms = generate::platforms_in(platform_dirs());
  for (uint64_t i = 0; i < a.count; ++i) {
    generate::generated_case c = generate::generate_case(a.seed + i, platforms);
    std::string path;
    try {
      path = generate::write_case(c, a.output);
    } catch (const std::exception& e) {
      throw config::error({a.output, 0, 0}, "--output", e.what());
    }
    std::cout << path << "  " << c.summary << "\n";
  }
  return 0;
}

}  // namespace p2psim::cli
