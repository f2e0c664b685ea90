// A switch refuses a request no port claims (PCIe Base Spec 2.9.1): a non-posted one gets
// Unsupported Request, a posted one is dropped. The dropped bytes are counted refused in the
// stream log, so the transfer they belong to ends with an error instead of never finishing
// (the run used to stall, "a deadlock in the model").
#include <catch2/catch.hpp>

#include "models/link/pcie_link.h"
#include "models/switch/pcie_switch.h"
#include "models/transport/stream_log.h"
#include "models/transport/tlp_txn.h"
#include "tests/models/sink_endpoint.h"

namespace {

using namespace p2psim;

using endpoint = test::sink_endpoint;

}  // namespace

TEST_CASE("a posted write a switch refuses is counted refused in its stream", "[ur][switch]") {
  transport::tlp_pool pool;
  pcie::order_policy order;
  transport::stream_log log;
  pcie_switch::pcie_switch sw("sw", pcie_switch::switch_params{{110, true, false, 0}, 1, 0}, log);
  endpoint host("host"), device("device");
  link::pcie_link up("up", link::pcie_link_params{}, order),
      down("down", link::pcie_link_params{}, order);
  up.connect(host.port, sw.upstream());
  down.connect(sw.downstream(0), device.port);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);

  const uint32_t stream = log.open(256);
  pcie::tlp_header h;
  h.type = pcie::tlp_type::mwr;
  h.address = 0x1000;  // no downstream port claims it
  h.length = 256;
  host.port.send(pool.make(h, stream));
  sc_core::sc_start();
  CHECK(sw.stats().unsupported_requests == 1);
  CHECK(log[stream].failed_bytes == 256);
  CHECK(log[stream].finished());
}
