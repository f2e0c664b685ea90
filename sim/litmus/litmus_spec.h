// A litmus test: a small topology, named memory locations with initial values, one program
// per agent (a DMA device, a GPU's copy engine, a GPU kernel, a CPU thread), a condition on
// what the agents observed and on the final memory, and whether that outcome must never,
// may, or must always happen. See docs/formats-litmus.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/overrides.h"
#include "sim/config/source_loc.h"
#include "sim/litmus/condition.h"

namespace p2psim::litmus {

struct location_spec {
  std::string name;
  std::string memory;        // a GPU (device memory, reached by peers through pinned BAR1 pages),
                             // a DMA engine (its BAR2 memory) or a socket (host memory)
  uint64_t offset = 0;       // host / BAR2 memory: byte offset; GPU: offset into its allocation
  uint64_t size = 8;         // bytes; a value fills every 8-byte word
  uint64_t init = 0;         // initial value
  bool ramp = false;         // init: ramp -- word i holds i
  bool sync_memops = false;  // GPU: CU_POINTER_ATTRIBUTE_SYNC_MEMOPS on its allocation
  config::source_loc loc;
};

enum class agent_kind { dma, kernel, cpu };
const char* to_string(agent_kind k);

enum class op_kind {
  write,        // store `value` (fabric write or local store)
  read,         // load into `reg`
  await,        // poll until the location holds `value` (or `timeout` passes)
  fence,        // DMA: wait until every earlier request has completed
  sleep,        // let `time_ns` pass
  launch,       // CPU: start an agent declared `start: launch` (a kernel launch is a CUDA work
                // submission; for a DMA device it is a doorbell)
  sync,         // CPU: cuCtxSynchronize
  flush,        // CPU: cuFlushGPUDirectRDMAWrites to `scope`
  copy,         // CPU: cuMemcpyDtoD from `location` to `to`
  atomic,       // DMA: a PCIe AtomicOp (`atomic`) on `location`; the old value into `reg`
  flush_cache,  // CPU: clflush the cache lines of `location` (host memory)
};

enum class atomic_op { fetch_add, swap, cas };  // PCIe FetchAdd, Swap, CAS

struct op_spec {
  op_kind kind = op_kind::write;
  std::string location;  // write / read / await / copy (the source)
  std::string to;        // copy: the destination location
  std::string reg;       // read / await / atomic (optional): the register that receives the value
  std::string into;      // read (DMA): a location in the agent's own memory the data lands in
  std::string agent;     // launch
  std::string scope;     // flush: owner | all_devices
  uint64_t value = 0;    // write / await; atomic: the addend, swap value or CAS's new value
  uint64_t compare = 0;  // atomic cas
  atomic_op atomic = atomic_op::fetch_add;
  bool relaxed_ordering = false, id_based_ordering = false;  // DMA requests' attributes
  bool no_snoop = false;         // a DMA write's or read's No Snoop attribute
  int traffic_class = 0;         // a DMA request's TC (0..7)
  bool sets_attributes = false;  // the step names either attribute (a variant leaves it be)
  bool async = false;            // copy: cuMemcpyDtoDAsync
  double time_ns = 0;            // sleep
  double poll_ns = 10;           // await: time between two looks
  double timeout_ns = 20000;     // await: give up after this long (the register stays unset)
  config::source_loc loc;
};

struct agent_spec {
  std::string name;
  agent_kind kind = agent_kind::dma;
  std::string device;     // dma: a DMA engine or a GPU (its copy engine); kernel: a GPU;
                          // cpu: a socket
  std::string context;    // cpu: the GPU of its CUDA context (for sync, flush, copy)
  bool launched = false;  // starts when a CPU agent launches it, not at time 0
  std::vector<op_spec> program;
  config::source_loc loc;
};

enum class expectation { forbidden, allowed, required };

// Outcomes the spec allows that the runs cannot reach on this machine, and why (timing, a
// completion size the completer does not cut): `when` names them, `on` the topologies (their
// file stems) it is said for, every one if empty.
struct unreached_spec {
  condition when;
  std::string why;
  std::vector<std::string> on;
  config::source_loc loc;
};

// A test's variants: it runs again with every fabric request of its DMA agents carrying
// Relaxed Ordering (or IDO), except in steps that set the attributes themselves. For the
// table's Yes and Y/N cells the attributes must change nothing.
enum class variant { ro, ido };
const char* to_string(variant v);
const char* to_string(expectation e);

struct litmus_spec {
  std::string name;
  std::string file;
  std::string description;
  std::string spec;  // the rule it checks: spec section / table cell
  // The premise about time the expectation rests on, where the spec alone would allow more
  // (the reference model, which has no time, then does not hold the expectation to it).
  std::string timing;
  std::vector<unreached_spec> unreached;
  std::string topology;                              // path, resolved against the test's folder
  std::vector<config::override_spec> topology_sets;  // `set:` items, like --set
  std::vector<location_spec> locations;
  std::vector<agent_spec> agents;
  condition cond;
  expectation expect = expectation::forbidden;
  int runs = 0;  // the test's own run budget (0: the command's --runs)
  std::vector<variant> variants;
  // More topologies the test runs on, each as a test of its own named "NAME@STEM" (the file's
  // stem): the same question on another of the guide's topology classes. Paths resolved like
  // `topology`.
  std::vector<std::string> also_on;
  config::source_loc loc;

  const location_spec* find_location(const std::string& n) const;
  const agent_spec* find_agent(const std::string& n) const;
  std::vector<std::string> registers() const;  // in order of first appearance
};

// "r0=1 r1=0 flag=1": an outcome's values in a fixed order (registers, then locations).
std::string outcome_key(const litmus_spec& t, const std::map<std::string, value>& values);

// Reads and checks a litmus file (names, kinds, which agent may touch which memory, the
// condition's names). Errors are config::error with file:line:col and the key.
litmus_spec load_litmus(const std::string& path);

// The test as written, then one copy per variant (named "NAME+RO", "NAME+IDO"); then the same
// on each topology of `also_on` ("NAME@STEM", "NAME+RO@STEM", ...).
std::vector<litmus_spec> with_variants(const litmus_spec& t);

}  // namespace p2psim::litmus
