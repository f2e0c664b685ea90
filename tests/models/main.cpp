// Catch2 runs inside sc_main: the SystemC library owns main().
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdlib>
#include <systemc>

int sc_main(int argc, char* argv[]) {
  return Catch::Session().run(argc, argv);
}

// Our own main, so the banner is off before SystemC's start-up code looks for the variable
// (machine-readable output stays clean).
int main(int argc, char* argv[]) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  return sc_core::sc_elab_and_sim(argc, argv);
}
