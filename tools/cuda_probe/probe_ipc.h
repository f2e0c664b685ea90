// `probe --ipc` as two sides taking turns: the exporter's turns and the importer's alternate,
// the exporter's first, each side's lines printed in turn order. probe_ipc.cpp has the two
// sequences; probe_ipc_fork.cpp runs them as two processes of the machine over a socketpair;
// tests/conformance/ipc_turns.cpp runs them as two simulated processes against the model.
#pragma once

#include "probe.h"

namespace cuda_probe::ipc {

// One side's end of the link between the two.
class turn_link {
 public:
  virtual ~turn_link() = default;
  virtual void line(const std::string& s) = 0;  // one of this side's lines
  // Named bytes (handles, IDs, tokens, VAs) for the other side's `data`.
  virtual void send_data(const std::string& key, const void* p, size_t n) = 0;
  virtual bool await() = 0;    // waits for the other side's turn to end; false if it went away
  virtual bool handoff() = 0;  // ends this side's turn and waits for the other's to end
  virtual void done() = 0;     // ends this side's last turn
  std::map<std::string, std::string> data;  // what the other side sent
};

// "who: line", or "# who: rest" for a comment line.
std::string prefixed(const std::string& who, const std::string& s);

void run_exporter(turn_link& l);  // its first turn, then after each of the importer's
void run_importer(turn_link& l);  // after each of the exporter's turns

}  // namespace cuda_probe::ipc
