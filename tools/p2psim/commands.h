// The subcommands of the p2psim command line.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace p2psim::cli {

struct run_args {
  std::string scenario;
  std::string json;
  std::vector<std::string> sets;
  int only_topology = -1;   // internal: run one topology of the scenario in this process
  std::string result_file;  // internal: where that run's JSON goes
};

struct topo_args {
  std::string topology;
  std::string dot;
  std::vector<std::string> sets;
  std::string import_nccl;  // NCCL topology XML to convert instead of printing a topology
  std::string output;       // where the converted topology goes; empty: standard output
};

struct litmus_args {
  std::vector<std::string> paths;
  int runs = 0;
  uint64_t seed = 1;
  std::string junit;
  std::string mutate;
  std::string choices;
  bool fail_fast = false;
  bool list_rules = false;
};

struct sweep_args {
  std::string scenario;
  std::vector<std::string> vary, sets;
  int jobs = 1;
  std::string csv, dir, emit_slurm, collect;
};

struct plot_args {
  std::string csv, x, y, by, title, output;
  std::vector<std::string> where;
};

void add_run(CLI::App& app, run_args& a);
void add_sweep(CLI::App& app, sweep_args& a);
int sweep_command(const sweep_args& a);
void add_plot(CLI::App& app, plot_args& a);
int plot_command(const plot_args& a);
void add_litmus(CLI::App& app, litmus_args& a);
int litmus_command(const litmus_args& a);
void add_topo(CLI::App& app, topo_args& a);
int run_command(const run_args& a, const char* argv0);
int topo_command(const topo_args& a);

// Where platform presets are looked for besides the topology file's own platforms/ folder.
std::vector<std::string> platform_dirs();

}  // namespace p2psim::cli
