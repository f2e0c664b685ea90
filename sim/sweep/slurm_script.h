// A sweep for a cluster: a Slurm job-array script and one argument file per run, so each
// array task runs one `p2psim run` and leaves its JSON and exit code in the sweep directory
// (Slurm schedules; p2psim has no scheduler of its own). `p2psim sweep --collect DIR` then
// writes the same CSV as a local sweep.
#pragma once

#include <string>

#include "sim/sweep/sweep_plan.h"

namespace p2psim::sweep {

// Writes DIR/sweep.json, DIR/args/NNNN.args (one argument per line) and DIR/sweep.sbatch;
// `p2psim` is the absolute path of the binary the tasks run. Returns the script's path.
std::string emit_slurm(const std::string& dir, const plan& p, const std::string& p2psim);

// The script's text (for a sweep directory that is an absolute path).
std::string slurm_script(const std::string& dir, const plan& p, const std::string& p2psim);

// `s` as one word for bash.
std::string shell_quote(const std::string& s);

}  // namespace p2psim::sweep
