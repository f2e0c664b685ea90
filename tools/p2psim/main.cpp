// p2psim: the command line. Exit codes: 0 success, 1 a check failed (data lost or refused,
// an expectation not met), 2 bad input (file:line:col and the key), 3 internal error.
#include <systemc>

#include <cstdlib>
#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "sim/config/error.h"
#include "tools/p2psim/commands.h"

int sc_main(int argc, char* argv[]) {
  CLI::App app{"p2psim: a PCIe peer-to-peer (GPUDirect RDMA) fabric simulator"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "p2psim " P2PSIM_VERSION " (SystemC " SC_VERSION ")");
  p2psim::cli::run_args run;
  p2psim::cli::topo_args topo;
  p2psim::cli::litmus_args litmus;
  p2psim::cli::sweep_args sweep;
  p2psim::cli::plot_args plot;
  p2psim::cli::bar1_args bar1;
  p2psim::cli::bench_args bench;
  p2psim::cli::params_args params;
  p2psim::cli::generate_args generate;
  p2psim::cli::validate_args validate;
  p2psim::cli::p2p_args p2p;
  p2psim::cli::add_run(app, run);
  p2psim::cli::add_topo(app, topo);
  p2psim::cli::add_litmus(app, litmus);
  p2psim::cli::add_sweep(app, sweep);
  p2psim::cli::add_plot(app, plot);
  p2psim::cli::add_bar1(app, bar1);
  p2psim::cli::add_bench(app, bench);
  p2psim::cli::add_params(app, params);
  p2psim::cli::add_generate(app, generate);
  p2psim::cli::add_validate(app, validate);
  p2psim::cli::add_p2p(app, p2p);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    if (app.got_subcommand("run")) return p2psim::cli::run_command(run, argv[0]);
    if (app.got_subcommand("topo")) return p2psim::cli::topo_command(topo);
    if (app.got_subcommand("litmus")) return p2psim::cli::litmus_command(litmus);
    if (app.got_subcommand("sweep")) return p2psim::cli::sweep_command(sweep);
    if (app.got_subcommand("plot")) return p2psim::cli::plot_command(plot);
    if (app.got_subcommand("bar1")) return p2psim::cli::bar1_command(bar1, argv[0]);
    if (app.got_subcommand("bench")) return p2psim::cli::bench_command(bench, argv[0]);
    if (app.got_subcommand("params")) return p2psim::cli::params_command(params);
    if (app.got_subcommand("generate")) return p2psim::cli::generate_command(generate);
    if (app.got_subcommand("validate")) return p2psim::cli::validate_command(validate, argv[0]);
    if (app.got_subcommand("p2p")) return p2psim::cli::p2p_command(p2p);
  } catch (const p2psim::config::error& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "p2psim: internal error: " << e.what() << "\n";
    return 3;
  }
  return 3;
}

// Our own main, so the banner is off before SystemC's start-up code looks for the variable
// (machine-readable output stays clean).
int main(int argc, char* argv[]) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  return sc_core::sc_elab_and_sim(argc, argv);
}
