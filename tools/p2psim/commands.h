// The subcommands of the p2psim command line.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "sim/config/overrides.h"

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
  std::string import_smi;   // nvidia-smi topo -m output to convert instead
  std::string platform;     // with import_smi: the sockets' preset
  std::string output;       // where the converted topology goes; empty: standard output
  bool effective = false;   // print every setting's value as a topology file instead
};

struct params_args {
  std::string update_docs;  // a docs page whose parameter tables to regenerate
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
  bool lint = false;
  int min_exhaustive = 0;
  bool mutation_score = false;
  bool no_model = false;  // skip the reference model check
  std::string explain;    // an outcome to explain by the reference model, or "condition"
};

struct bar1_args {
  std::string scenario;
  std::string sizes;  // "256MiB,16GiB"; empty: powers of two up to the topology's BAR1
  std::string gpu;    // the GPU to size; empty: the one the program creates contexts on
  std::string json;
  std::string plot;  // an SVG file drawn by gnuplot
  std::vector<std::string> sets;
  std::string only_size;    // internal: run the program at this one BAR1 size in this process
  std::string result_file;  // internal: where that run's JSON goes
};

struct sweep_args {
  std::string scenario;
  std::vector<std::string> vary, sets;
  int jobs = 1;
  std::string csv, dir, emit_slurm, collect;
};

struct bench_args {
  std::string fidelity = "both";
  std::string cases;        // "write_1g,matrix_8gpu"; empty: every case
  std::string scale_sizes;  // "256MiB,1GiB,4GiB"
  double size_factor = 1;
  int repeat = 1;          // runs of each case and floor; the fastest counts
  int cpu = -1;            // the CPU every run is pinned to; -1: the one the bench starts on
  std::string cases_dir;   // empty: the source tree's scenarios/bench
  uint64_t pins = 0;       // pin/unpin cycles of each kind; 0: none
  std::string pin_cycles;  // "get_put,kmd"; empty: every kind
  std::string json;
  std::string floor;        // internal: "TXNS,HOPS", run one floor in this process
  std::string result_file;  // internal: where that floor's JSON goes
};

struct generate_args {
  uint64_t seed = 1;
  uint64_t count = 1;
  std::string output = ".";
};

struct validate_args {
  std::string table;  // empty: the source tree's scenarios/validation/measurements.yaml
  std::string rows;   // "id,id"; empty: every row
  std::string json;
};

struct p2p_args {
  std::string topology;
  std::string size;  // bytes per copy; empty: the sample's 40,000,000
  std::string fidelity = "tlp";
  std::vector<std::string> sets;
  std::string json;
  std::string scenario;  // where to write the program it runs, as a scenario file
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
// Pipes `script` to gnuplot; throws with gnuplot's complaint when it fails (plot_command.cpp).
void run_gnuplot(const std::string& script);
void add_bar1(CLI::App& app, bar1_args& a);
int bar1_command(const bar1_args& a, const char* argv0);
void add_bench(CLI::App& app, bench_args& a);
int bench_command(const bench_args& a, const char* argv0);
void add_litmus(CLI::App& app, litmus_args& a);
int litmus_command(const litmus_args& a);
void add_topo(CLI::App& app, topo_args& a);
void add_params(CLI::App& app, params_args& a);
void add_generate(CLI::App& app, generate_args& a);
int generate_command(const generate_args& a);
void add_validate(CLI::App& app, validate_args& a);
int validate_command(const validate_args& a, const char* argv0);
void add_p2p(CLI::App& app, p2p_args& a);
int p2p_command(const p2p_args& a);
int params_command(const params_args& a);
int run_command(const run_args& a, const char* argv0);
int topo_command(const topo_args& a);

// Where platform presets are looked for besides the topology file's own platforms/ folder.
std::vector<std::string> platform_dirs();

// --set items, split into topology paths and scenario paths (run_command.cpp).
struct split_overrides {
  std::vector<config::override_spec> topology, scenario;
};
split_overrides parse_sets(const std::vector<std::string>& sets);

// Runs this binary again with `args` (argv[0] first) in a child process and waits: SystemC
// elaborates once per process, so each simulation of a command that runs several gets its
// own. Returns the child's exit code; `what` names the run if it crashes.
int run_self(const std::vector<std::string>& args, const std::string& what);
// The same without waiting (for waitpid), stdout and stderr into `output` when given.
pid_t start_self(const std::vector<std::string>& args, const std::string& output = "");

}  // namespace p2psim::cli
