// Work done in a child process of its own, its result sent back as text: a litmus run (SystemC
// elaborates once per process) and the reference model's walk (whose memory would otherwise
// stay with the parent and make every later fork slower).
#pragma once

#include <functional>
#include <string>

namespace p2psim::litmus {

struct child_output {
  std::string text;   // what `work` returned
  std::string error;  // "" or why there is no text (a crash, an exit without a result)
};

child_output in_child(const std::function<std::string()>& work);

}  // namespace p2psim::litmus
