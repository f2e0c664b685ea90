#!/usr/bin/env bash
# Writes the JSON result of every shipped scenario (scenarios/*.yaml, bench/, faults/) into
# OUTDIR, without the `host` block (wall time, memory: they differ run to run), so that two
# builds can be compared byte for byte:
#   tools/scenario_json.sh build/tools/p2psim/p2psim /tmp/before
#   ... change the code, rebuild ...
#   tools/scenario_json.sh build/tools/p2psim/p2psim /tmp/after
#   diff -r /tmp/before /tmp/after     # empty: every result is unchanged
# Bench scenarios also run at burst fidelity. Needs jq.
set -euo pipefail
p2psim=$(realpath "$1")
out=$2
mkdir -p "$out"
cd "$(dirname "$0")/.."
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
run() {  # name, scenario, extra args...
  local name=$1 file=$2
  shift 2
  local tmp
  tmp=$(mktemp)
  "$p2psim" run "$file" --json "$tmp" "$@" >/dev/null 2>&1 || true
  jq 'del(.host) | del(.. | .host?)' "$tmp" >"$out/$name.json" 2>/dev/null || echo "no JSON" >"$out/$name.json"
  rm -f "$tmp"
}
for f in scenarios/*.yaml scenarios/faults/*.yaml scenarios/bench/*.yaml; do
  name=$(echo "${f#scenarios/}" | tr / _)
  run "${name%.yaml}" "$f"
done
for f in scenarios/bench/*.yaml; do
  name=$(basename "$f" .yaml)
  run "bench_${name}_burst" "$f" --fidelity burst
done
