#include "sim/sweep/slurm_script.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "sim/sweep/sweep_csv.h"

namespace p2psim::sweep {

namespace fs = std::filesystem;

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string slurm_script(const std::string& dir, const plan& p, const std::string& p2psim) {
  const std::string d = shell_quote(dir);
  return fmt::format(
      "#!/bin/bash\n"
      "# p2psim sweep of {scenario}: {runs} runs as a Slurm job array.\n"
      "#   submit:  sbatch {script}\n"
      "#   then:    p2psim sweep --collect {d} --csv results.csv\n"
      "#SBATCH --job-name=p2psim-sweep\n"
      "#SBATCH --array=0-{last}\n"
      "#SBATCH --cpus-per-task=1\n"
      "#SBATCH --output={dir}/logs/%a.out\n"
      "set -u\n"
      "run=$(printf '%04d' \"$SLURM_ARRAY_TASK_ID\")\n"
      "mkdir -p {d}/results {d}/logs\n"
      "mapfile -t args < {d}/args/\"$run\".args\n"
      "{bin} run \"${{args[@]}}\" > {d}/logs/\"$run\".txt 2>&1\n"
      "code=$?\n"
      "echo \"$code\" > {d}/results/\"$run\".exit\n"
      "exit \"$code\"\n",
      fmt::arg("scenario", p.scenario), fmt::arg("runs", p.runs()),
      fmt::arg("script", shell_quote(dir + "/sweep.sbatch")), fmt::arg("d", d),
      fmt::arg("dir", dir), fmt::arg("last", p.runs() - 1), fmt::arg("bin", shell_quote(p2psim)));
}

std::string emit_slurm(const std::string& dir, const plan& p, const std::string& p2psim) {
  const std::string abs = fs::absolute(dir).lexically_normal().string();
  if (abs.find('\n') != std::string::npos || abs.find('%') != std::string::npos)
    throw std::runtime_error("a Slurm sweep directory may not contain '%' or a line break");
  write_plan(abs, p);
  fs::create_directories(fs::path(abs) / "args");
  fs::create_directories(fs::path(abs) / "logs");
  for (size_t i = 0; i < p.runs(); ++i) {
    std::ofstream f(fs::path(abs) / "args" / (run_stem(i) + ".args"));
    for (const auto& a : p.run_arguments(i, result_json_path(abs, i))) {
      if (a.find('\n') != std::string::npos)
        throw std::runtime_error("an argument holds a line break: " + a);
      f << a << "\n";
    }
  }
  const std::string script = (fs::path(abs) / "sweep.sbatch").string();
  std::ofstream(script) << slurm_script(abs, p, p2psim);
  fs::permissions(script, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::add);
  return script;
}

}  // namespace p2psim::sweep
