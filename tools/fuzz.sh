#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz (`make fuzz`): each on a seed corpus made from the
# repository's own inputs, for FUZZ_SECONDS (default 60). Prints executions and crashes per
# target and exits 1 if any target found a crash, a sanitizer report, a timeout or an
# out-of-memory; the input that did it is kept in BUILD/findings/.
# Usage: tools/fuzz.sh BUILD_DIR [TARGET...]   (targets: topology scenario litmus nccl smi driver)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: tools/fuzz.sh BUILD_DIR [TARGET...]}
shift
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(topology scenario litmus nccl smi driver)
seconds=${FUZZ_SECONDS:-60}

# Seeds: every input of that kind the repository has, good and bad.
seeds() {
  case "$1" in
    topology) ls topologies/*.yaml tests/data/topologies/*/*.yaml
              grep -l '^# expect: topo |' tests/corpus/bad/*.yaml ;;
    scenario) ls scenarios/*.yaml scenarios/bench/*.yaml scenarios/faults/*.yaml \
                 tests/data/scenarios/*.yaml
              grep -l '^# expect: run' tests/corpus/bad/*.yaml ;;
    litmus)   ls scenarios/litmus/*.yaml tests/data/litmus/*.yaml
              grep -l '^# expect: litmus' tests/corpus/bad/*.yaml ;;
    nccl)     ls tests/data/nccl/*.xml tests/corpus/bad/*.xml ;;
    smi)      ls tests/data/nvidia_smi/*.txt tests/data/hw_probe/*/*/topo-m.txt \
                 tests/corpus/bad/nvidia_smi_*.txt ;;
  esac 2>/dev/null
}

failed=0
mkdir -p "$build/findings"
printf '%-10s %12s %10s %8s %8s\n' target executions exec/s corpus crashes
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  mkdir -p "$corpus"
  seeds "$t" | while read -r f; do cp "$f" "$corpus/seed-$(basename "$f")"; done
  dict=()
  max_len=16384
  case "$t" in
    nccl | smi) ;;
    driver) max_len=4096 ;;  # 255 commands of 16 bytes: sequences longer than the property test's
    *) dict=(-dict=tests/fuzz/yaml.dict) ;;
  esac
  log="$build/fuzz-$t.log"
  status=0
  "$build/tests/fuzz/fuzz_$t" "$corpus" "${dict[@]}" -max_total_time="$seconds" -max_len="$max_len" \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/findings/$t-" >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  crashes=$(find "$build/findings" -name "$t-*" | wc -l)
  printf '%-10s %12s %10s %8s %8s\n' "$t" "${runs:-?}" "${rate:-?}" "$(ls "$corpus" | wc -l)" \
    "$crashes"
  if [ "$status" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    failed=1
    echo "fuzz_$t: finding (exit $status); see $log and $build/findings/" >&2
    grep -m5 -E 'ERROR|==[0-9]+==|terminate|what\(\)' "$log" >&2 || true
  fi
done
exit "$failed"
