#include "sim/litmus/mutation_score.h"

#include <algorithm>
#include <stdexcept>

#include "sim/topology/topology_graph.h"

namespace p2psim::litmus {

int test_topology_class(const litmus_spec& t, const topo::topology& topo) {
  const topo::fabric_graph graph(topo);
  auto is_socket = [&](const std::string& n) {
    return std::any_of(topo.sockets.begin(), topo.sockets.end(),
                       [&](const auto& s) { return s.name == n; });
  };
  // Peer to peer first: the paths between devices are what the guide's classes are about.
  // Only a test whose every location is host memory takes its class from those paths.
  int peer = 0, host = 0;
  for (const auto& a : t.agents)
    for (const auto& l : t.locations) {
      if (a.device == l.memory) continue;
      try {
        const int c = topo::topology_class(graph.classify(a.device, l.memory));
        int& into = is_socket(l.memory) || is_socket(a.device) ? host : peer;
        into = std::max(into, c);
      } catch (const std::invalid_argument&) {
        // a name the graph does not hold as a node: no path
      }
    }
  return peer ? peer : host;
}

}  // namespace p2psim::litmus
