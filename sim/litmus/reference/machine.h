// The reference model's machine: a litmus test as a state and the steps the spec lets it take,
// with no time at all. Any agent may take its next step whenever it can, and any TLP may leave
// the queue it waits in whenever the ordering table lets it pass every TLP that came in before
// it (pcie_table.h); reads take their data when they reach the completer; what a running
// kernel sees of RDMA writes and when a CUDA copy lands follow the guide (5.7). Every state
// that no step leaves is an end of the test: an agent still polling there gives up (its
// register stays unset), as a timeout would.
//
// The agents (docs/formats-litmus.md, "Agents"):
// - dma: requests into the fabric in program order, split as the requester does (writes in
//   Max Payload Size pieces, reads in Max Read Request Size ones, neither across 4 KiB); the
//   data of a request's completions is placed in the order they come (a requester relies on
//   Cpl-Cpl b); `fence` waits for its reads and AtomicOps and for its writes to leave its link
//   queue; loads and stores of its own memory are immediate;
// - kernel: loads and stores of GPU memory; RDMA writes that land reach it at once if the
//   GPU's WRITES_ORDERING covers it, else each 32 B sector of a write is seen or not at its
//   first load, and what it missed until a CPU-side submission, synchronization or flush;
// - cpu: loads and stores of host memory through the CPUs' cached lines (cached_location),
//   flushes of them, and the CUDA calls of its context.
//
// A TLP's data lands at its completer at once; a completer answers a read from one look at
// its memory, in completions cut at every Read Completion Boundary (the finest cut the spec
// allows). A CUDA copy that returns before it is complete lands 32 B sector by sector, in any
// order, by the next work on its stream.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/litmus/condition.h"
#include "sim/litmus/litmus_spec.h"
#include "sim/litmus/reference/fabric.h"
#include "sim/litmus/reference/pcie_table.h"
#include "sim/topology/topology.h"

namespace p2psim::litmus::reference {

using words = std::vector<uint64_t>;

struct tlp {
  tlp_ordering ord;
  int agent = -1;      // whose request it is, or answers
  int request = -1;    // index into state::requests
  int route = -1;      // index into the machine's routes
  int leg = 0;         // 0 out, 1 back, 2 a proxy's out, 3 a proxy's back (route)
  int hop = 0;         // which queue of the leg it waits in
  uint32_t first = 0;  // words of the location: the first,
  uint32_t count = 0;  // and how many
  uint64_t value = 0;  // a write's value (every word); an AtomicOp's operand
  words data;          // a completion's data
  bool no_snoop = false;
};

// One request on its way: a read request, an AtomicOp, or a proxying root complex's read.
struct request_state {
  int step = -1;    // the agent's step it belongs to (a gather); -1: a proxy's
  int parent = -1;  // a proxy's read: the request it reads for
  uint32_t first = 0, count = 0;
  uint32_t received = 0;   // words of completions in so far, placed in the order they came
  uint32_t forwarded = 0;  // a proxied request: words the root complex has returned
  words data;              // what came in, in place
};

// A step of an agent waiting for its requests' data: a read (all of its requests) or an
// AtomicOp.
struct gather_state {
  int agent = -1;
  int pending = 0;  // requests still out
  words data;       // the location's words, as they came in
};

struct copy_state {  // a CUDA copy still landing
  int agent = -1, to = -1;
  words data;                // the source, as it was when the copy was called
  std::vector<bool> landed;  // per 32 B sector
};

struct pending_write {  // a landed RDMA write a kernel has not seen yet
  uint32_t first = 0, count = 0;
  uint64_t value = 0;
  bool hidden = false;  // decided at a load: not yet seen
};

struct view_state {  // what kernels of one GPU see of a location they are not covered for
  int location = -1;
  std::string observer;  // the GPU the kernels run on
  words seen;
  std::vector<pending_write> pending;
};

// What the CPUs hold cached of a host location, 64 B line by line: a CPU load takes the lines
// not held from memory and holds them; a snooped write (no No Snoop; an AtomicOp) drops the
// lines it touches, a No Snoop write leaves them stale, and the next load finds each such line
// kept or evicted (read again); flush_cache drops them all.
struct cached_location {
  std::vector<bool> held;       // per line the location touches
  std::vector<bool> undecided;  // per line: held, made stale since the last load
  words data;                   // its words, as held (0 where a line is not)
};

struct agent_state {
  int pc = 0;
  bool started = true;
  int outstanding = 0;   // non-posted requests without all their completions
  int posted_near = 0;   // posted TLPs still in its own link's queue
  bool syncing = false;  // in cuCtxSynchronize, waiting for the context's kernels
};

struct state {
  std::vector<agent_state> agents;
  std::vector<value> registers;
  std::vector<words> memory;  // per location (empty for one nobody looks at)
  std::vector<std::vector<tlp>> queues;
  std::vector<request_state> requests;
  std::vector<gather_state> gathers;
  std::vector<tlp> proxy_held;  // completions a proxying root complex holds, in place
  std::vector<copy_state> copies;
  std::vector<view_state> views;
  std::vector<cached_location> cache;  // per location; none in a test without No Snoop

  std::string encode() const;  // equal states, equal strings
};

struct successor {
  state next;
  std::string label;   // what happened (only when labels are asked for)
  bool agent = false;  // an agent's step (else the fabric's or a copy's)
};

class machine {
 public:
  machine(const litmus_spec& test, const topo::topology& topo, rule_set rules, bool labels);

  state initial() const;
  // Every state one step leads to.
  std::vector<successor> successors(const state& s) const;
  // At a state no step leaves: one agent still polling gives up (one successor each).
  std::vector<successor> timeouts(const state& s) const;
  // Registers and the locations the condition names, as a run reports them.
  std::map<std::string, value> outcome(const state& s) const;

 private:
  struct placed_location {
    const location_spec* spec = nullptr;
    std::string memory;
    bool gpu = false;
    bool observed = false;  // read, awaited, copied, landed into or named by the condition
    uint32_t words = 0;
  };
  struct agent_info {
    const agent_spec* spec = nullptr;
    std::vector<int> route;  // per step: its fabric request's route, or -1 (none)
  };

  void agent_steps(const state& s, int a, std::vector<successor>& out) const;
  void queue_steps(const state& s, int q, std::vector<successor>& out) const;
  void copy_steps(const state& s, std::vector<successor>& out) const;
  void proxy_steps(const state& s, std::vector<successor>& out) const;

  void issue(state& s, int a, int step) const;
  // A TLP at the end of its leg: every state it can lead to (one but for a BAR1 read that
  // GPU:bar1-read-back taken out lets see landed writes or not).
  std::vector<state> arrivals(const state& s, const tlp& t) const;
  // `data`: what a read is answered from (nullptr: the location's memory).
  void arrive(state& s, tlp t, const words* data = nullptr) const;
  void enter(state& s, tlp t, int leg, int hop) const;
  void land(state& s, int loc, uint32_t first, const words& data, bool rdma) const;
  void land_value(state& s, int loc, uint32_t first, uint32_t count, uint64_t v, bool rdma) const;
  void reveal(state& s, const std::string& memory_gpu, const std::string& observer) const;
  // CPU caches (cached_location), where the test has No Snoop writes.
  std::vector<std::pair<state, value>> cpu_loads(const state& s, int loc) const;
  void cpu_store(state& s, int loc, uint64_t v) const;
  void drop_lines(state& s, int loc, uint32_t first, uint32_t count) const;
  void stale_lines(state& s, int loc, uint32_t first, uint32_t count) const;
  uint32_t line_of(int loc, uint32_t word) const;
  void finish_copies(state& s, int agent) const;
  // The loads of a kernel on `gpu`: every way the sectors it has not decided on can go.
  std::vector<std::pair<state, value>> kernel_loads(const state& s, const std::string& gpu,
                                                    int loc) const;
  value value_of_location(const words& w, int loc) const;
  bool covered(const std::string& memory_gpu, const std::string& observer) const;
  const leg& leg_of(const tlp& t) const;
  const op_spec* step_of(const tlp& t) const;
  int location_index(const std::string& name) const;
  int register_index(const std::string& name) const;

  static constexpr uint32_t sector_words = 4;         // a 32 B sector, in 8 B words
  static constexpr uint64_t line_bytes = 64;          // a CPU cache line
  static constexpr const char* bar1_reader = "BAR1";  // the view BAR1 reads see (view_state)
  static constexpr uint64_t page_bytes = 4096;        // requests do not cross it

  const litmus_spec& m_test;
  const topo::topology& m_topo;
  rule_set m_rules;
  bool m_labels;
  fabric m_fabric;
  std::vector<placed_location> m_locations;
  std::vector<agent_info> m_agents;
  std::vector<std::string> m_registers;
  std::vector<route> m_routes;  // every route a TLP may be on (tlp::route)
  uint32_t m_rcb_words = 8;
  bool m_caches = false;  // a No Snoop write, or Host:snoop off: CPU loads go through caches
};

}  // namespace p2psim::litmus::reference
