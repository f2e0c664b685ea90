#include "sim/topology/topology_loader.h"

#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "sim/config/param_reader.h"

namespace p2psim::topo {

platform_params load_platform(const std::string& path) {
  config::document doc = config::document::load(path);
  config::node_reader r = doc.root();
  platform_params p;
  const std::string stem = std::filesystem::path(path).stem().string();
  p.loc = r.loc();
  p.name = r.str("name", stem);
  if (p.name != stem)
    r.fail("name", fmt::format("preset '{}' must be in a file named {}.yaml (this is {}.yaml)",
                               p.name, p.name, stem));
  p.description = r.str("description", "");
  config::read_params(r, root_complex::platform_spec_params(), p.spec);
  r.done();
  for (const auto& key : r.keys()) p.key_locs[key] = r.loc(key);
  return p;
}

std::vector<std::string> available_platforms(const std::vector<std::string>& dirs) {
  namespace fs = std::filesystem;
  std::set<std::string> names;
  for (const auto& dir : dirs) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().extension() == ".yaml") names.insert(it->path().stem().string());
  }
  return {names.begin(), names.end()};
}

}  // namespace p2psim::topo
