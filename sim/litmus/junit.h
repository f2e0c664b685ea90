// JUnit XML for CI: one <testcase> per litmus test, a <failure> when its expectation did not
// hold (or a run failed), the outcome table in <system-out>.
#pragma once

#include <string>
#include <vector>

#include "sim/litmus/explore.h"
#include "sim/litmus/litmus_spec.h"

namespace p2psim::litmus {

struct junit_case {
  std::string name, file;
  test_result result;
  std::string report;   // the text the command printed for it
  std::string failure;  // one line: why it failed ("" when it passed)
};

// The XML document, for the command to write where it was asked to.
std::string junit_xml(const std::string& suite, const std::vector<junit_case>& cases);

}  // namespace p2psim::litmus
