#include "models/pcie/choices.h"

namespace p2psim::pcie {
namespace {
choice_source* g_source = nullptr;
}
choice_source* active_choice_source() {
  return g_source;
}
void set_choice_source(choice_source* s) {
  g_source = s;
}
}  // namespace p2psim::pcie
